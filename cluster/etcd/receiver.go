package etcd

import (
	"context"
	"io"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// raftReceiver is the member as the transport sees it.
type raftReceiver Member

func (r *raftReceiver) m() *Member { return (*Member)(r) }

// Process steps a message from a peer. A paused member does not read its
// network, so the message waits (and the sender's queue fills), as it would
// for a frozen process.
func (r *raftReceiver) Process(ctx context.Context, msg *raftpb.Message) error {
	m := r.m()
	if err := m.gate.pass(ctx); err != nil {
		return err
	}
	m.noteLeaderContact(msg)
	m.events.Publish(Event{Member: m.cfg.Name, Kind: EventRecv, Msg: messageInfo(msg, m.peerName)})
	return m.node.Step(ctx, msg)
}

// ReceiveSnapshot stores a snapshot's payload, then steps its message.
func (r *raftReceiver) ReceiveSnapshot(ctx context.Context, msg *raftpb.Message, payload io.Reader) error {
	m := r.m()
	if err := m.gate.pass(ctx); err != nil {
		return err
	}
	if err := m.saveIncomingSnapshot(msg, payload); err != nil {
		return err
	}
	m.noteLeaderContact(msg)
	m.events.Publish(Event{Member: m.cfg.Name, Kind: EventRecv, Msg: messageInfo(msg, m.peerName)})
	return m.node.Step(ctx, msg)
}

func (r *raftReceiver) IsIDRemoved(id uint64) bool { return r.m().members.isRemoved(id) }

func (r *raftReceiver) ReportUnreachable(id uint64) { r.m().node.ReportUnreachable(id) }

func (r *raftReceiver) ReportSnapshot(id uint64, status raft.SnapshotStatus) {
	r.m().node.ReportSnapshot(id, status)
}

// noteLeaderContact resets the election timer the UI draws when the leader
// is heard from, mirroring what resets raft's own timer.
func (m *Member) noteLeaderContact(msg *raftpb.Message) {
	switch msg.GetType() {
	case raftpb.MsgApp, raftpb.MsgHeartbeat, raftpb.MsgSnap:
		if msg.GetTerm() >= m.term.Load() {
			m.ticksSinceLeader.Store(0)
		}
	}
}
