package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
	sched "github.com/klab-dev/klab/cluster/scheduler"
	"github.com/klab-dev/klab/ui/views/events/feed"
)

// Every master runs a kube-scheduler (its debug port is the node's
// "scheduler" port); they elect a leader on the Lease
// kube-system/kube-scheduler, and only the leader schedules. The view
// follows every one's /debug/klab/events stream: decisions come from
// whichever leads, the others report only leader changes, and a failover
// needs no rediscovery.

// schedulerPort is the name of a node's kube-scheduler debug port.
const schedulerPort = "scheduler"

// eventItem is one event from one scheduler's stream.
type eventItem struct {
	Node  string
	Event sched.Event
}

// stateItem says that a scheduler's stream opened (Err nil) or failed.
type stateItem struct {
	Node string
	Err  error
}

// streamClient reads the streams: no overall timeout (a stream lasts),
// but one for connecting and for the answer's headers, so that a frozen
// scheduler is noticed.
var streamClient = &http.Client{Transport: &http.Transport{
	DialContext:           (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
	ResponseHeaderTimeout: 3 * time.Second,
	DisableCompression:    true,
}}

// schedulers lists the nodes that run a kube-scheduler and where this
// machine reaches each one's debug server.
func schedulers(info *lab.Info) []source {
	var out []source
	for _, n := range info.Nodes {
		if n.Role == runtime.RoleMaster && n.HostAddr(schedulerPort) != "" {
			out = append(out, source{Node: n.Name})
		}
	}
	return out
}

// follow reads the event stream of node's scheduler into f until ctx
// ends. It asks to replay what the scheduler kept after the last event it
// saw, so that reconnecting neither loses nor repeats events (a restarted
// scheduler numbers from 1 again; its new events still arrive live).
func follow(ctx context.Context, f *feed.Feed, node runtime.Node) {
	base := node.HostURL(schedulerPort) + "/debug/klab/events?since="
	var lastSeq uint64
	open := func(ctx context.Context) (io.ReadCloser, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+strconv.FormatUint(lastSeq, 10), nil)
		if err != nil {
			return nil, err
		}
		resp, err := streamClient.Do(req)
		if err != nil {
			// The URL is known; the cause is what the view shows.
			var uerr *url.Error
			if errors.As(err, &uerr) {
				return nil, uerr.Err
			}
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, fmt.Errorf("GET %s: %s", req.URL.Path, resp.Status)
		}
		return resp.Body, nil
	}
	line := func(b []byte) {
		var e sched.Event
		if json.Unmarshal(b, &e) != nil {
			return
		}
		lastSeq = e.Seq
		f.Send(eventItem{Node: node.Name, Event: e})
	}
	state := func(err error) { f.Send(stateItem{Node: node.Name, Err: err}) }
	feed.Follow(ctx, open, line, state)
}
