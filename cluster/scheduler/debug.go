package scheduler

import (
	"net/http"
	"time"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/internal/eventstream"
)

// Status is the scheduler's state, as GET /debug/klab/status serves it.
type Status struct {
	// Identity is the leader-election identity (Identity_<uuid>), or the
	// configured identity without leader election.
	Identity string `json:"identity"`
	// Leader reports whether this scheduler leads (always, without leader
	// election); LeaderHolder is the lease holder it last saw.
	Leader         bool   `json:"leader"`
	LeaderHolder   string `json:"leaderHolder"`
	LeaderElection bool   `json:"leaderElection"`
	// Queue is how many pods wait where.
	Queue QueueStatus `json:"queue"`
	// Counters count outcomes since the start.
	Counters Counters `json:"counters"`
	// CycleP50 and CycleP99 are percentiles of the recent scheduling
	// cycles' durations.
	CycleP50 time.Duration `json:"cycleP50Ns"`
	CycleP99 time.Duration `json:"cycleP99Ns"`
	// Nodes, Pods and AssumedPods describe the cache.
	Nodes       int `json:"nodes"`
	Pods        int `json:"pods"`
	AssumedPods int `json:"assumedPods"`
}

// QueueStatus counts the pods of each sub-queue.
type QueueStatus struct {
	Active        int `json:"active"`
	Backoff       int `json:"backoff"`
	Unschedulable int `json:"unschedulable"`
}

// Status returns the scheduler's state.
func (s *Scheduler) Status() Status {
	st := Status{Identity: s.identity, LeaderElection: s.leaderElection != nil}
	st.Leader, st.LeaderHolder = s.leader()
	st.Queue.Active, st.Queue.Backoff, st.Queue.Unschedulable = s.queue.Lengths()
	st.Counters, st.CycleP50, st.CycleP99 = s.stats.snapshot()
	st.Nodes = s.cache.NodeCount()
	st.Pods, st.AssumedPods = s.cache.PodCount()
	return st
}

// Decisions returns the recent decisions about a pod, oldest first. An
// empty name matches every pod of the namespace; an empty namespace, every
// namespace.
func (s *Scheduler) Decisions(namespace, name string) []Decision {
	return s.decisions.list(namespace, name)
}

// debugMux serves /healthz and /debug/klab.
func (s *Scheduler) debugMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("GET /debug/klab/status", func(w http.ResponseWriter, r *http.Request) {
		componentbase.WriteJSON(w, http.StatusOK, s.Status())
	})
	mux.HandleFunc("GET /debug/klab/decisions", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		componentbase.WriteJSON(w, http.StatusOK, s.Decisions(q.Get("namespace"), q.Get("name")))
	})
	// Decisions, bindings and leader changes, each news: written at once,
	// or within 50 ms with ?quiet=.
	mux.HandleFunc("GET /debug/klab/events", func(w http.ResponseWriter, r *http.Request) {
		eventstream.Serve(w, r, s.hub, eventstream.Options[Event]{Status: func() any { return s.Status() }, Done: s.ctx.Done()})
	})
	return mux
}
