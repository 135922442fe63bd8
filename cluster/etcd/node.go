package etcd

import (
	"encoding/json"
	"fmt"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/klab-dev/klab/cluster/etcd/rafthttp"
	"github.com/klab-dev/klab/cluster/etcd/raftlog"
)

// startRaft builds the raft node from what storage held and connects the
// transport. A member with an empty log either bootstraps the initial
// cluster or, when joining, waits for the leader to send it the log.
func (m *Member) startRaft(bs *bootState) error {
	m.raftStorage = raft.NewMemoryStorage()
	if err := raftlog.Restore(m.raftStorage, bs.raft); err != nil {
		return err
	}
	m.applied.Store(bs.applied)
	m.persisted.Store(bs.applied)
	m.snapIndex.Store(bs.raft.Snapshot.GetMetadata().GetIndex())
	m.term.Store(bs.raft.HardState.GetTerm())
	if bs.applied > 0 {
		if t, err := m.raftStorage.Term(bs.applied); err == nil {
			m.appliedTerm.Store(t)
		}
	}

	c := &raft.Config{
		ID:                        m.id,
		ElectionTick:              m.cfg.ElectionTicks,
		HeartbeatTick:             m.cfg.HeartbeatTicks,
		Storage:                   m.raftStorage,
		Applied:                   bs.raft.Snapshot.GetMetadata().GetIndex(),
		MaxSizePerMsg:             1 << 20,
		MaxInflightMsgs:           4096 / 8,
		MaxUncommittedEntriesSize: 1 << 30,
		CheckQuorum:               true,
		PreVote:                   true,
		Logger:                    &raftLogger{lg: m.lg.With("component", "raft")},
	}

	m.transport = rafthttp.New(rafthttp.Config{
		ID:        m.id,
		ClusterID: m.clusterID,
		Name:      m.cfg.Name,
		PeerName:  m.peerName,
		Faults:    m.cfg.Faults,
		Raft:      (*raftReceiver)(m),
		Snapshots: m.snapshotSource,
		Observe:   m.observeTransport,
		Logger:    m.lg.With("component", "rafthttp"),
		TLS:       m.cfg.PeerClientTLS,
	})
	switch {
	case bs.fresh && !m.cfg.Join:
		peers := make([]raft.Peer, 0, len(m.cfg.InitialCluster))
		for _, p := range m.cfg.InitialCluster {
			ctx, err := json.Marshal(peerMemberInfo(p, m.cfg.ClusterToken))
			if err != nil {
				return err
			}
			peers = append(peers, raft.Peer{ID: MemberID(p.PeerURL, m.cfg.ClusterToken), Context: ctx})
		}
		m.node = raft.StartNode(c, peers)
		m.addConfiguredPeers()
	case bs.fresh:
		m.node = raft.RestartNode(c)
		m.addConfiguredPeers()
	default:
		m.node = raft.RestartNode(c)
		m.syncTransportPeers()
	}
	return nil
}

// addConfiguredPeers connects to the initial cluster before the membership
// is known from the log.
func (m *Member) addConfiguredPeers() {
	m.peersMu.Lock()
	defer m.peersMu.Unlock()
	m.peers = map[uint64]string{}
	for _, p := range m.cfg.InitialCluster {
		if id := MemberID(p.PeerURL, m.cfg.ClusterToken); id != m.id {
			m.transport.AddPeer(id, p.PeerURL)
			m.peers[id] = p.PeerURL
		}
	}
}

func peerMemberInfo(p Peer, token string) *memberInfo {
	mi := &memberInfo{ID: MemberID(p.PeerURL, token), Name: p.Name, PeerURLs: []string{p.PeerURL}}
	if p.ClientURL != "" {
		mi.ClientURLs = []string{p.ClientURL}
	}
	return mi
}

// peerName maps a member ID to its name, for the fault table and the UI.
func (m *Member) peerName(id uint64) string {
	if n := m.members.name(id); n != "" {
		return n
	}
	for _, p := range m.cfg.InitialCluster {
		if MemberID(p.PeerURL, m.cfg.ClusterToken) == id {
			return p.Name
		}
	}
	return ""
}

func (m *Member) observeTransport(ev string, msg *raftpb.Message) {
	kind := EventDrop
	if ev == "unreachable" {
		kind = EventUnreachable
	}
	m.events.Publish(Event{Member: m.cfg.Name, Kind: kind, Msg: messageInfo(msg, m.peerName)})
}

// raftLogger routes the raft library's log into the member's slog logger.
// The library's Info lines (elections, term changes) are routine in a lab,
// so they go to Debug; the event stream is where the UI sees them.
type raftLogger struct {
	lg interface {
		Debug(string, ...any)
		Info(string, ...any)
		Warn(string, ...any)
		Error(string, ...any)
	}
}

func (l *raftLogger) Debug(v ...any)                   { l.lg.Debug(fmt.Sprint(v...)) }
func (l *raftLogger) Debugf(format string, v ...any)   { l.lg.Debug(fmt.Sprintf(format, v...)) }
func (l *raftLogger) Info(v ...any)                    { l.lg.Debug(fmt.Sprint(v...)) }
func (l *raftLogger) Infof(format string, v ...any)    { l.lg.Debug(fmt.Sprintf(format, v...)) }
func (l *raftLogger) Warning(v ...any)                 { l.lg.Warn(fmt.Sprint(v...)) }
func (l *raftLogger) Warningf(format string, v ...any) { l.lg.Warn(fmt.Sprintf(format, v...)) }
func (l *raftLogger) Error(v ...any)                   { l.lg.Error(fmt.Sprint(v...)) }
func (l *raftLogger) Errorf(format string, v ...any)   { l.lg.Error(fmt.Sprintf(format, v...)) }

// Fatal and Panic are what the raft library calls on invariant violations
// (a corrupted log, a conflicting committed entry); continuing would risk
// losing committed data, so they panic as upstream's default logger does.
func (l *raftLogger) Fatal(v ...any)                 { l.lg.Error(fmt.Sprint(v...)); panic(fmt.Sprint(v...)) }
func (l *raftLogger) Fatalf(format string, v ...any) { l.Fatal(fmt.Sprintf(format, v...)) }
func (l *raftLogger) Panic(v ...any)                 { l.Fatal(v...) }
func (l *raftLogger) Panicf(format string, v ...any) { l.Fatalf(format, v...) }
