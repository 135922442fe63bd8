package live

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"sync"
	"time"

	"github.com/klab-dev/klab/cluster/proxy"
	"github.com/klab-dev/klab/lessons"
)

// proxyPoll is how often the kube-proxies are asked for their mode: a
// change of mode takes a sync or two to reach every node.
const proxyPoll = time.Second

// followProxies asks every node's kube-proxy for its status each
// proxyPoll, and reports what changed.
func (f *Feed) followProxies() {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		last := map[string]lessons.ProxyObserved{}
		for {
			var changed []lessons.Observation
			for _, o := range f.readProxies() {
				p := o.(lessons.ProxyObserved)
				if prev, seen := last[p.Node]; !seen || !sameProxy(prev, p) {
					last[p.Node] = p
					changed = append(changed, p)
				}
			}
			if len(changed) > 0 && !f.send(item{obs: changed}) {
				return
			}
			if !sleep(f.ctx, proxyPoll) {
				return
			}
		}
	}()
}

// sameProxy says a and b report the same state.
func sameProxy(a, b lessons.ProxyObserved) bool {
	return a.Node == b.Node && a.Mode == b.Mode && a.Unreachable == b.Unreachable && maps.EqualFunc(a.Services, b.Services, lessons.SameProxiedService)
}

// readProxies asks every node's kube-proxy for its status at once.
func (f *Feed) readProxies() []lessons.Observation {
	out := make([]lessons.Observation, len(f.info.Nodes))
	var wg sync.WaitGroup
	for i, n := range f.info.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := lessons.ProxyObserved{Node: n.Name, Unreachable: true}
			if addr := n.HostAddr("proxy"); addr != "" {
				if st, err := f.proxyStatus(addr); err == nil {
					p = lessons.ProxyObserved{Node: n.Name, Mode: st.Mode, Services: map[string]lessons.ProxiedService{}}
					for name, s := range st.Services {
						p.Services[name] = lessons.ProxiedService{Endpoints: s.Endpoints, Pods: s.Pods, ExternalLocal: s.ExternalLocal, InternalLocal: s.InternalLocal}
					}
				}
			}
			out[i] = p
		}()
	}
	wg.Wait()
	return out
}

// proxyStatus reads one kube-proxy's /debug/klab/status.
func (f *Feed) proxyStatus(addr string) (*proxy.Status, error) {
	req, err := http.NewRequestWithContext(f.ctx, http.MethodGet, "http://"+addr+"/debug/klab/status", nil)
	if err != nil {
		return nil, err
	}
	resp, err := f.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &statusError{resp.Status}
	}
	var st proxy.Status
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&st); err != nil {
		return nil, err
	}
	return &st, nil
}

type statusError struct{ status string }

func (e *statusError) Error() string { return "kube-proxy status: " + e.status }
