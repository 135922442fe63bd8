package live

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/lessons"
)

// followEtcdRequests follows every etcd member's request stream
// (/debug/klab/requests): each serves the requests its clients sent it,
// and etcdctl talks to whichever member it picks. Requests from before
// this call are not reported, and a reconnected stream's replay is
// reported once, as followRequests does for the API servers.
func (f *Feed) followEtcdRequests() {
	since := time.Now()
	f.wg.Add(len(f.info.Members))
	for _, m := range f.info.Members {
		go func() {
			defer f.wg.Done()
			last := since
			f.reread("etcd request stream", "member", m.Name, func() error { return f.readEtcdRequests(m.HTTPClient(0), m, &last) })
		}()
	}
}

// readEtcdRequests reads one connection's stream of member m, reporting
// the requests served after *last, and moving *last on.
func (f *Feed) readEtcdRequests(client *http.Client, m lab.MemberInfo, last *time.Time) error {
	// DebugURL is the base of the member's /debug/klab endpoints.
	url := fmt.Sprintf("%s/requests?quiet=%s", m.DebugURL, requestQuiet)
	req, err := http.NewRequestWithContext(f.ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), maxRequestLine)
	for sc.Scan() {
		var ev etcd.RequestEvent
		// Status lines have no method.
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Method == "" || !ev.Time.After(*last) {
			continue
		}
		*last = ev.Time
		obs := lessons.EtcdRequestObserved{
			Member: ev.Member, Method: ev.Method, Key: ev.Key, RangeEnd: ev.RangeEnd,
			Code: ev.Code, Component: ev.Component, Time: ev.Time,
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
