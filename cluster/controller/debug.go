package controller

import (
	"net/http"
	"time"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/internal/eventstream"
	"github.com/klab-dev/klab/cluster/timing"
)

// QueueReporter is implemented by controllers that can say how much work
// waits for them; /debug/klab/status shows it. A controller package cannot
// import this one (the manager imports the controllers), so it just has
// the method. Like upstream's optional controller interfaces (Debuggable,
// HealthCheckable), it is optional.
type QueueReporter interface {
	QueueLen() int
}

// SyncReporter is implemented by controllers that count their syncs and
// the failed ones; /debug/klab/status shows them.
type SyncReporter interface {
	SyncCounts() (syncs, failures uint64)
}

// Status is a manager's /debug/klab/status.
type Status struct {
	// Identity is the manager's lease identity; Node the master it runs on.
	Identity string `json:"identity"`
	Node     string `json:"node"`
	// Leader says whether this manager holds the lease and runs the
	// controllers; Holder is the identity it last saw holding it.
	Leader bool    `json:"leader"`
	Holder string  `json:"holder"`
	Speed  float64 `json:"speed"`
	// Timings are the manager's and its controllers' timings, lab value
	// beside upstream's.
	Timings     []timing.Row       `json:"timings"`
	Controllers []ControllerStatus `json:"controllers"`
	// Error is why the manager stopped, if it did on its own.
	Error string `json:"error,omitempty"`
}

// ControllerStatus is one enabled controller in a Status.
type ControllerStatus struct {
	Name    string `json:"name"`
	Running bool   `json:"running"`
	Workers int    `json:"workers"`
	// QueueDepth, Syncs and SyncErrors are there when the controller
	// reports them (QueueReporter, SyncReporter) and runs.
	QueueDepth *int    `json:"queueDepth,omitempty"`
	Syncs      *uint64 `json:"syncs,omitempty"`
	SyncErrors *uint64 `json:"syncErrors,omitempty"`
}

// statusTimings names the rows of timing.Table a controller manager uses.
var statusTimings = map[string]bool{
	"leader-elect-lease-duration":            true,
	"leader-elect-renew-deadline":            true,
	"leader-elect-retry-period":              true,
	"node-monitor-period":                    true,
	"node-monitor-grace-period":              true,
	"node-startup-grace-period":              true,
	"default-not-ready-toleration-seconds":   true,
	"default-unreachable-toleration-seconds": true,
}

// Status reports the manager's state, as /debug/klab/status serves it.
func (m *Manager) Status() Status {
	m.mu.Lock()
	st := Status{
		Identity: m.identity,
		Node:     m.cfg.Identity,
		Leader:   m.leading,
		Holder:   m.holder,
		Speed:    m.cfg.Speed.Factor(),
	}
	if err := m.life.Err(); err != nil {
		st.Error = err.Error()
	}
	running := m.running
	m.mu.Unlock()
	lease, renew, retry := m.cfg.Speed.LeaderElection()
	actual := map[string]time.Duration{
		"leader-elect-lease-duration": lease,
		"leader-elect-renew-deadline": renew,
		"leader-elect-retry-period":   retry,
	}
	for _, row := range m.cfg.Speed.Table() {
		if !statusTimings[row.Name] {
			continue
		}
		if d, ok := actual[row.Name]; ok {
			row.Lab = d
		}
		st.Timings = append(st.Timings, row)
	}
	for _, name := range m.enabled {
		cs := ControllerStatus{Name: name, Workers: m.cfg.workersFor(name)}
		if ctrl, ok := running[name]; ok {
			cs.Running = true
			if q, ok := ctrl.(QueueReporter); ok {
				n := q.QueueLen()
				cs.QueueDepth = &n
			}
			if s, ok := ctrl.(SyncReporter); ok {
				syncs, failures := s.SyncCounts()
				cs.Syncs, cs.SyncErrors = &syncs, &failures
			}
		}
		st.Controllers = append(st.Controllers, cs)
	}
	return st
}

// debugHandler serves /healthz and /debug/klab.
func (m *Manager) debugHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", m.serveHealthz)
	mux.HandleFunc("GET /debug/klab/status", func(w http.ResponseWriter, r *http.Request) {
		componentbase.WriteJSON(w, http.StatusOK, m.Status())
	})
	// Leader changes and node lifecycle transitions, each news: few, and
	// written at once.
	mux.HandleFunc("GET /debug/klab/events", func(w http.ResponseWriter, r *http.Request) {
		eventstream.Serve(w, r, m.events, eventstream.Options[Event]{Status: func() any { return m.Status() }, Done: m.life.Quit()})
	})
	return mux
}

// serveHealthz fails when this manager leads but has not renewed its
// lease for a while: it may be stuck (upstream's leader election
// watchdog).
func (m *Manager) serveHealthz(w http.ResponseWriter, r *http.Request) {
	if err := m.watchdog.Check(r); err != nil {
		http.Error(w, "leaderElection check failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	_, _ = w.Write([]byte("ok"))
}
