package proxy

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/internal/eventstream"
	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// Status is the proxy's state, as GET /debug/klab/status serves it.
type Status struct {
	Node string `json:"node"`
	// Mode is the running mode; IPVSScheduler the configured ipvs
	// scheduler (used in ipvs mode).
	Mode          string `json:"mode"`
	IPVSScheduler string `json:"ipvsScheduler"`
	// ConfigSource is "configmap" when the running settings come from
	// kube-system/kube-proxy, "default" when there is none (or the first
	// one read was invalid). ConfigError is why the ConfigMap's current
	// content is not in force; empty if it is.
	ConfigSource string `json:"configSource"`
	ConfigError  string `json:"configError"`
	// ModeSince is when the running mode was built.
	ModeSince time.Time `json:"modeSince"`
	// ServicePorts and Endpoints count what the last sync saw; Rules is
	// how many rules it programmed.
	ServicePorts int      `json:"servicePorts"`
	Endpoints    int      `json:"endpoints"`
	Rules        int      `json:"rules"`
	LastSync     SyncInfo `json:"lastSync"`
	Syncs        uint64   `json:"syncs"`
	// MinSyncPeriod and SyncPeriod are the lab's values: the configured
	// ones divided by the speed.
	MinSyncPeriod time.Duration `json:"minSyncPeriodNs"`
	SyncPeriod    time.Duration `json:"syncPeriodNs"`
	// NodePorts lists the NodePorts listening now; NodePortErrors says why
	// the others cannot.
	NodePorts      []int          `json:"nodePorts"`
	NodePortErrors map[int]string `json:"nodePortErrors"`
	Connections    ConnectionInfo `json:"connections"`
	// Services maps each Service the last sync programmed (namespace/name)
	// to what it programmed.
	Services map[string]ProgrammedService `json:"services"`
}

// ProgrammedService is one Service as the last sync programmed it: the
// ready endpoints of its port with the most, the Pods behind them (by
// name, sorted; an endpoint that names no Pod is counted but not listed),
// and its traffic policies.
type ProgrammedService struct {
	Endpoints     int      `json:"endpoints"`
	Pods          []string `json:"pods,omitempty"`
	ExternalLocal bool     `json:"externalLocal,omitempty"`
	InternalLocal bool     `json:"internalLocal,omitempty"`
}

// SyncInfo describes one sync.
type SyncInfo struct {
	At       time.Time     `json:"at"`
	Duration time.Duration `json:"durationNs"`
	Rules    int           `json:"rules"`
}

// ConnectionInfo counts the connections through the data path since the
// start: Failed reached no endpoint; Retried needed more than one dial
// (userspace only).
type ConnectionInfo struct {
	Total   uint64 `json:"total"`
	Failed  uint64 `json:"failed"`
	Retried uint64 `json:"retried"`
}

// Status returns the proxy's state.
func (p *Proxy) Status() Status {
	p.statusMu.Lock()
	st := p.state
	p.statusMu.Unlock()
	s := Status{
		Node:          p.cfg.NodeName,
		IPVSScheduler: st.settings.ipvsScheduler,
		ConfigSource:  st.configSource,
		ConfigError:   st.configError,
		ServicePorts:  st.servicePorts,
		Endpoints:     st.endpoints,
		Rules:         st.lastSync.Rules,
		LastSync:      st.lastSync,
		Syncs:         st.syncs,
		Connections: ConnectionInfo{
			Total:   p.stats.total.Load(),
			Failed:  p.stats.failed.Load(),
			Retried: p.stats.retried.Load(),
		},
	}
	if g := p.current(); g != nil {
		s.Mode, s.ModeSince = g.mode.Name(), g.since
	}
	s.MinSyncPeriod, s.SyncPeriod = p.runner.Intervals()
	s.Services = programmedServices(st.snapshot)
	s.NodePorts, s.NodePortErrors = p.nodePorts.listening()
	return s
}

// Rules writes what the running mode programs, in the format of its tool
// (iptables-save, ipvsadm -Ln, nft list ruleset).
func (p *Proxy) Rules(w io.Writer) error {
	g := p.current()
	if g == nil {
		return errors.New("kube-proxy has not started")
	}
	return g.mode.Render(w)
}

// debugMux serves /healthz and /debug/klab.
func (p *Proxy) debugMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !p.healthy.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("no sync yet"))
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("GET /debug/klab/status", func(w http.ResponseWriter, r *http.Request) {
		componentbase.WriteJSON(w, http.StatusOK, p.Status())
	})
	mux.HandleFunc("GET /debug/klab/rules", func(w http.ResponseWriter, r *http.Request) {
		var buf bytes.Buffer
		if err := p.Rules(&buf); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write(buf.Bytes())
	})
	// Syncs, mode switches and errors, each news: written at once, or
	// within 50 ms with ?quiet=.
	mux.HandleFunc("GET /debug/klab/events", func(w http.ResponseWriter, r *http.Request) {
		eventstream.Serve(w, r, p.hub, eventstream.Options[Event]{Status: func() any { return p.Status() }, Done: p.ctx.Done()})
	})
	return mux
}

// programmedServices describes each Service of snap.
func programmedServices(snap *proxier.Snapshot) map[string]ProgrammedService {
	out := map[string]ProgrammedService{}
	if snap == nil {
		return out
	}
	for name, info := range snap.Services {
		ready := 0
		var pods []string
		for _, ep := range snap.Endpoints[name] {
			if ep.Ready {
				ready++
				if ep.Pod != "" {
					pods = append(pods, ep.Pod)
				}
			}
		}
		key := name.NamespacedName.String()
		if prev, seen := out[key]; seen && prev.Endpoints >= ready {
			continue
		}
		slices.Sort(pods)
		out[key] = ProgrammedService{Endpoints: ready, Pods: pods, ExternalLocal: info.ExternalPolicyLocal, InternalLocal: info.InternalPolicyLocal}
	}
	return out
}
