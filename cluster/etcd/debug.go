package etcd

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/tracker"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/internal/eventstream"
)

// Status reports the member's raft view: what /debug/klab/status serves.
func (m *Member) Status() Status {
	st := Status{
		ID:             hexID(m.id),
		Name:           m.cfg.Name,
		ClusterID:      hexID(m.clusterID),
		ClientURL:      m.self.ClientURL,
		PeerURL:        m.self.PeerURL,
		ElectionTicks:  m.cfg.ElectionTicks,
		HeartbeatTicks: m.cfg.HeartbeatTicks,
		Fsync:          !m.cfg.NoFsync,
		Clock:          m.clock.status(),
	}
	select {
	case <-m.life.Done():
		st.State = "stopped"
		return st
	default:
	}
	if !m.started.Load() {
		st.State = "stopped"
		return st
	}
	rs := m.node.Status()
	st.State = rs.RaftState.String()
	if m.gate.isShut() {
		st.State = "paused"
	}
	st.Term = rs.HardState.GetTerm()
	st.Vote = hexID(rs.HardState.GetVote())
	st.Leader = hexID(rs.Lead)
	st.Commit = rs.HardState.GetCommit()
	st.Applied = m.applied.Load()
	st.SnapshotIndex = m.snapIndex.Load()
	st.FirstIndex, _ = m.raftStorage.FirstIndex()
	st.LastIndex, _ = m.raftStorage.LastIndex()
	st.Revision = m.store.Rev()
	st.CompactRevision = m.store.CompactRev()
	st.DBSize = m.dbSize()
	st.QuotaBackendBytes = m.cfg.QuotaBackendBytes
	for _, a := range m.alarms.list(pb.AlarmType_NONE) {
		st.Alarms = append(st.Alarms, a.Alarm.String())
		st.AlarmMembers = append(st.AlarmMembers, hexID(a.MemberID))
	}
	st.ElectionElapsed = int(m.ticksSinceLeader.Load())
	if rs.RaftState == raft.StateLeader {
		st.ElectionElapsed = 0
		st.Progress = map[string]Progress{}
		for id, pr := range rs.Progress {
			if id == m.id {
				continue
			}
			name := m.peerName(id)
			if name == "" {
				name = hexID(id)
			}
			st.Progress[name] = Progress{
				Match: pr.Match, Next: pr.Next, State: pr.State.String(),
				RecentActive: pr.RecentActive, Paused: pr.MsgAppFlowPaused || pr.State == tracker.StateSnapshot,
			}
		}
	}
	return st
}

// dbSize is the size of the member's bbolt file, as etcd reports its
// backend size.
func (m *Member) dbSize() int64 {
	var size int64
	m.dbMu.RLock()
	defer m.dbMu.RUnlock()
	if m.db == nil {
		return 0
	}
	_ = m.db.View(func(tx *bolt.Tx) error {
		size = tx.Size()
		return nil
	})
	return size
}

// dbSizes returns the database size and the part of it in use: the size
// less the pages bbolt holds free for reuse, which a defragmentation gives
// back.
func (m *Member) dbSizes() (size, inUse int64) {
	m.dbMu.RLock()
	defer m.dbMu.RUnlock()
	if m.db == nil {
		return 0, 0
	}
	_ = m.db.View(func(tx *bolt.Tx) error {
		size = tx.Size()
		return nil
	})
	st := m.db.Stats()
	inUse = size - int64(st.FreePageN+st.PendingPageN)*int64(m.db.Info().PageSize)
	return size, max(inUse, 0)
}

// registerDebug serves /debug/klab: status, the event stream and clock
// control.
func (m *Member) registerDebug(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/klab/status", func(w http.ResponseWriter, r *http.Request) {
		componentbase.WriteJSON(w, http.StatusOK, m.Status())
	})
	// Raft events. A steady cluster's traffic (Event.Routine) waits for
	// the stream's flush interval; without ?quiet= events wait up to
	// 50 ms, so that a heartbeat round (or a busy second, a few hundred
	// events) reaches a reader in a few writes, every one of them. A
	// pair's heartbeats, and their answers, are a series.
	mux.HandleFunc("GET /debug/klab/events", func(w http.ResponseWriter, r *http.Request) {
		eventstream.Serve(w, r, m.events, eventstream.Options[Event]{
			Hold: eventstream.NewsWait, Routine: Event.Routine,
			Series: heartbeatSeries,
			Summarize: func(e *Event, n int, skipped uint64) {
				if n > 1 {
					e.Beats = n
				}
				e.Skipped = skipped
			},
			Status: func() any { return m.Status() }, Done: m.stopc,
		})
	})
	mux.HandleFunc("GET /debug/klab/requests", m.serveRequests)
	mux.HandleFunc("GET /debug/klab/clock", func(w http.ResponseWriter, r *http.Request) {
		componentbase.WriteJSON(w, http.StatusOK, m.clock.status())
	})
	mux.HandleFunc("POST /debug/klab/clock", m.serveClock)
	mux.HandleFunc("GET /health", m.serveHealth)
}

// serveHealth answers as etcd's /health endpoint does, which kubeadm's
// liveness probe of the etcd static pod polls: healthy while the member
// knows a leader.
func (m *Member) serveHealth(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if m.Status().Leader == "0" {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"health":"false","reason":"RAFT NO LEADER"}`))
		return
	}
	w.Write([]byte(`{"health":"true","reason":""}`))
}

// ClockRequest is the body of POST /debug/klab/clock. Every field is
// optional: set the tick interval, pause or resume, and step N ticks.
type ClockRequest struct {
	TickIntervalMS *float64 `json:"tickIntervalMs,omitempty"`
	Paused         *bool    `json:"paused,omitempty"`
	Step           int      `json:"step,omitempty"`
}

func (m *Member) serveClock(w http.ResponseWriter, r *http.Request) {
	var req ClockRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil {
		http.Error(w, "clock request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := m.SetClock(req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	componentbase.WriteJSON(w, http.StatusOK, m.clock.status())
}

// SetClock changes the member's raft clock: what POST /debug/klab/clock does.
func (m *Member) SetClock(req ClockRequest) error {
	cur := m.clock.status()
	interval := time.Duration(0)
	if req.TickIntervalMS != nil {
		ms := *req.TickIntervalMS
		if ms < 1 || ms > 60000 {
			return fmt.Errorf("tickIntervalMs must be between 1 and 60000, got %v", ms)
		}
		interval = time.Duration(ms * float64(time.Millisecond))
	}
	if req.Step < 0 || req.Step > 1000 {
		return fmt.Errorf("step must be between 0 and 1000, got %d", req.Step)
	}
	paused := cur.Paused
	if req.Paused != nil {
		paused = *req.Paused
	}
	m.clock.set(interval, paused)
	if req.Step > 0 {
		m.clock.step(req.Step)
	}
	after := m.clock.status()
	m.events.Publish(Event{Member: m.cfg.Name, Kind: EventClock,
		Detail: fmt.Sprintf("interval %.0fms paused=%v step=%d", after.TickIntervalMS, after.Paused, req.Step)})
	return nil
}
