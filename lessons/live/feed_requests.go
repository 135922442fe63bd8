package live

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/klab-dev/klab/cluster/apiserver"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/lessons"
)

// requestQuiet is how long an API server holds its routine requests
// before writing them to the stream: every request is routine to it, and
// a check needs them within a second, not each on its own.
const requestQuiet = 250 * time.Millisecond

// maxRequestLine bounds one line of a request stream.
const maxRequestLine = 1 << 20

// apiServer is one master's API server, and where this machine reaches
// it (cluster.json lists the URLs in the masters' order).
type apiServer struct{ node, url string }

func apiServers(info *lab.Info) []apiServer {
	var masters []runtime.Node
	for _, n := range info.Nodes {
		if n.Role == runtime.RoleMaster {
			masters = append(masters, n)
		}
	}
	out := make([]apiServer, 0, len(info.APIServers))
	for i, u := range info.APIServers {
		name := fmt.Sprintf("apiserver-%d", i+1)
		for _, m := range masters {
			if "https://"+m.HostAddr("apiserver") == u {
				name = m.Name
			}
		}
		out = append(out, apiServer{node: name, url: u})
	}
	return out
}

// followRequests follows every API server's request stream
// (/debug/klab/events): each serves only the requests that reached it,
// so a kubectl that the load balancer sent to any of them is seen.
// Requests from before this call are not reported: a stream replays its
// server's recent requests to a new reader, and a reconnected one
// replays what came in while it was away, which is reported once.
func (f *Feed) followRequests() {
	cfg, conns, err := f.restConfig()
	if err != nil {
		f.logger.Warn("lessons feed: API requests are not followed", "err", err)
		return
	}
	since := time.Now()
	servers := apiServers(f.info)
	f.wg.Add(len(servers) + 1)
	go func() {
		defer f.wg.Done()
		<-f.ctx.Done()
		conns.close()
	}()
	for _, srv := range servers {
		go func() {
			defer f.wg.Done()
			f.followServer(cfg, srv, since)
		}()
	}
}

// followServer follows one API server's request stream until the Feed
// closes, reconnecting after a pause when it breaks.
func (f *Feed) followServer(base *rest.Config, srv apiServer, since time.Time) {
	cfg := rest.CopyConfig(base)
	cfg.Host = srv.url
	// A stream has no end: no timeout but the Feed's.
	cfg.Timeout = 0
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		f.logger.Warn("lessons feed: request stream client", "server", srv.node, "err", err)
		return
	}
	client := cs.CoreV1().RESTClient()
	last := since
	f.reread("request stream", "server", srv.node, func() error { return cause(f.readRequests(client, srv, &last)) })
}

// reread reads a stream with read until the Feed closes, again after a
// growing pause each time it breaks: a component killed on purpose comes
// back, and until then it is retried without a word above debug. what,
// key and name say which stream in the log.
func (f *Feed) reread(what, key, name string, read func() error) {
	wait := retryMin
	for {
		err := read()
		if f.ctx.Err() != nil {
			return
		}
		f.logger.Debug("lessons feed: "+what+" retried", key, name, "err", err)
		if !sleep(f.ctx, wait) {
			return
		}
		wait = min(2*wait, retryMax)
	}
}

// readRequests reads one connection's stream, reporting the requests
// served after *last, and moving *last on.
func (f *Feed) readRequests(client rest.Interface, srv apiServer, last *time.Time) error {
	body, err := client.Get().AbsPath("/debug/klab/events").Param("quiet", requestQuiet.String()).Stream(f.ctx)
	if err != nil {
		return err
	}
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64*1024), maxRequestLine)
	for sc.Scan() {
		var ev apiserver.RequestEvent
		// Status lines ({"kind":"status",...}) have no verb.
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Verb == "" || !ev.Time.After(*last) {
			continue
		}
		*last = ev.Time
		if observer(ev.UserAgent) {
			continue
		}
		obs := lessons.RequestObserved{
			Server: srv.node, Verb: ev.Verb, Resource: ev.Resource, Subresource: ev.Subresource,
			Namespace: ev.Namespace, Name: ev.Name, User: ev.User, Code: ev.Code, Time: ev.Time,
		}
		if !f.send(item{obs: []lessons.Observation{obs}}) {
			return f.ctx.Err()
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return context.Canceled
}

// observers are the user agents of klab's own readers of the cluster:
// the TUI's views and this feed. What they read is how klab draws and
// judges, never a student's act, so no check sees it.
var observers = []string{"klab-tui", "klab-lessons"}

func observer(userAgent string) bool {
	for _, o := range observers {
		if userAgent == o || strings.HasPrefix(userAgent, o+"/") {
			return true
		}
	}
	return false
}

// cause drops the method and URL client-go puts before a connection's
// error.
func cause(err error) error {
	if uerr, ok := err.(*url.Error); ok {
		return uerr.Err
	}
	return err
}
