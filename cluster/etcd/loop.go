package etcd

import (
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/klab-dev/klab/cluster/etcd/mvcc"
	"github.com/klab-dev/klab/cluster/etcd/raftlog"
)

// run is the member's raft loop, in the shape raft's doc.go asks for: for
// each Ready it (1) persists the hard state, the entries and any snapshot,
// (2) sends the messages, (3) applies the committed entries, and (4) calls
// Advance. Steps 1 and 3 share one bbolt transaction, so the applied index
// is always stored atomically with the key-value changes it produced: a
// restart never applies an entry twice and never loses one.
func (m *Member) run() {
	defer m.wg.Done()
	for {
		if err := m.gate.pass(ctxFromStop(m.stopc)); err != nil {
			return
		}
		select {
		case <-m.stopc:
			return
		case <-m.clock.tickc:
			if m.gate.isShut() {
				continue
			}
			m.node.Tick()
			m.ticksSinceLeader.Add(1)
		case rd := <-m.node.Ready():
			if err := m.handleReady(rd); err != nil {
				m.fail(err)
				return
			}
		case done := <-m.defragc:
			// Between two Readies nothing writes to the database.
			err := m.defragment()
			done <- err
			if errors.Is(err, errDefragLostDB) {
				m.fail(err)
				return
			}
		}
	}
}

func (m *Member) handleReady(rd raft.Ready) error {
	// The hard state first, so that role and leader events carry the term
	// they belong to.
	if rd.HardState != nil && !raft.IsEmptyHardState(rd.HardState) {
		m.term.Store(rd.HardState.GetTerm())
	}
	if rd.SoftState != nil {
		m.updateSoftState(rd.SoftState)
	}
	if len(rd.ReadStates) > 0 {
		rs := rd.ReadStates[len(rd.ReadStates)-1]
		select {
		case m.readStatec <- rs:
		default:
			// A stale read state is still waiting; replace it.
			select {
			case <-m.readStatec:
			default:
			}
			m.readStatec <- rs
		}
	}

	// A leader may send before it persists: its followers write the same
	// entries in parallel (the Raft thesis, §10.2.1), and the entries are
	// only committed once a quorum, counting the leader's own write after
	// this Ready, has them. etcd does the same. Followers must persist
	// first: their replies acknowledge what they have on disk.
	sentEarly := false
	if m.isLeader() {
		m.sendMessages(rd.Messages)
		sentEarly = true
	}

	var results []pendingResult
	var confChanged bool
	tx, err := m.db.Begin(true)
	if err != nil {
		return fmt.Errorf("begin bbolt transaction: %w", err)
	}
	snap := rd.Snapshot
	if snap != nil && !raft.IsEmptySnap(snap) {
		if err := m.installSnapshot(tx, snap); err != nil {
			tx.Rollback()
			return err
		}
		// Entries committed after the snapshot in this same Ready are
		// published below, before the commit; the status must not show
		// their keys while still reporting no snapshot.
		m.snapIndex.Store(snap.GetMetadata().GetIndex())
	}
	if err := raftlog.Save(tx, rd.HardState, rd.Entries); err != nil {
		tx.Rollback()
		return err
	}
	applied, appliedTerm := m.applied.Load(), m.appliedTerm.Load()
	for _, e := range rd.CommittedEntries {
		if e.GetIndex() <= applied {
			// Already in the key-value state (we restarted and raft is
			// replaying the log since the last snapshot). Its effect on
			// raft's own configuration must still be replayed.
			if err := m.replayConfChange(e); err != nil {
				tx.Rollback()
				return err
			}
			continue
		}
		res, cc, err := m.applyEntry(tx, e)
		if err != nil {
			tx.Rollback()
			return fmt.Errorf("apply entry %d: %w", e.GetIndex(), err)
		}
		if cc {
			confChanged = true
		}
		results = append(results, res...)
		applied, appliedTerm = e.GetIndex(), e.GetTerm()
	}
	newlyApplied := applied != m.applied.Load()
	if newlyApplied {
		if err := mvcc.WriteConsistentIndex(tx, applied, appliedTerm); err != nil {
			tx.Rollback()
			return err
		}
		// Committed entries are on a quorum's disks already, so their
		// results can be answered, and watchers told, before this
		// member's own copy of the applied state reaches its disk: were
		// that write to fail, the member would stop and, on restart,
		// apply them again from the log. This keeps the apply fsync off
		// the client's path, as etcd's batched backend does.
		m.store.Publish()
		m.applied.Store(applied)
		m.appliedTerm.Store(appliedTerm)
		for _, r := range results {
			if isNoSpace(r.result.err) && !m.alarms.has(pb.AlarmType_NOSPACE) {
				// As etcd: the write went past the quota; answer once
				// the alarm is raised, so that the client that got the
				// error finds it in the alarm list.
				m.go_(func() {
					m.raiseNoSpace(ctxFromStop(m.stopc))
					m.wait.trigger(r.id, r.result)
				})
				continue
			}
			m.wait.trigger(r.id, r.result)
		}
		m.appliedNotify.notify()
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit to %s (is the disk full?): %w", m.dbPath(), err)
	}
	if newlyApplied {
		m.persisted.Store(applied)
		m.persistedNotify.notify()
	}

	if snap != nil && !raft.IsEmptySnap(snap) {
		if err := m.raftStorage.ApplySnapshot(snap); err != nil {
			return fmt.Errorf("apply snapshot to raft storage: %w", err)
		}
		m.snapIndex.Store(snap.GetMetadata().GetIndex())
		m.afterSnapshotInstalled(snap)
	}
	if rd.HardState != nil && !raft.IsEmptyHardState(rd.HardState) {
		if err := m.raftStorage.SetHardState(rd.HardState); err != nil {
			return err
		}
	}
	if err := m.raftStorage.Append(rd.Entries); err != nil {
		return fmt.Errorf("append to raft storage: %w", err)
	}

	if !sentEarly {
		m.sendMessages(rd.Messages)
	}
	if confChanged {
		m.syncTransportPeers()
	}
	if err := m.maybeSnapshot(); err != nil {
		return err
	}
	m.node.Advance()
	return nil
}

// updateSoftState follows raft role and leader changes: the lessor tracks
// expiry only on the leader, and the UI hears about every change.
func (m *Member) updateSoftState(ss *raft.SoftState) {
	prevState, _ := m.raftState.Load().(raft.StateType)
	prevLead := m.lead.Load()
	m.raftState.Store(ss.RaftState)
	m.lead.Store(ss.Lead)
	term := m.term.Load()
	if ss.RaftState != prevState {
		m.events.Publish(Event{Member: m.cfg.Name, Kind: EventState, State: ss.RaftState.String(), Term: term, Leader: hexID(ss.Lead)})
		switch ss.RaftState {
		case raft.StateLeader:
			m.lessor.Promote(m.electionTimeout())
		case raft.StateCandidate, raft.StatePreCandidate:
			m.ticksSinceLeader.Store(0)
			m.events.Publish(Event{Member: m.cfg.Name, Kind: EventElection, State: ss.RaftState.String(), Term: term})
		}
		if prevState == raft.StateLeader {
			m.lessor.Demote()
		}
	}
	if ss.Lead != prevLead {
		m.ticksSinceLeader.Store(0)
		m.lastLeaderChange.Store(time.Now().UnixNano())
		m.events.Publish(Event{Member: m.cfg.Name, Kind: EventLeader, State: ss.RaftState.String(), Term: term, Leader: hexID(ss.Lead)})
		m.leaderNotify.notify()
	}
}

// sendMessages hands a Ready's messages to the transport, recording each for
// the event stream. A message to ourselves never leaves the process.
func (m *Member) sendMessages(msgs []*raftpb.Message) {
	if len(msgs) == 0 {
		return
	}
	for _, msg := range msgs {
		m.events.Publish(Event{Member: m.cfg.Name, Kind: EventSend, Msg: messageInfo(msg, m.peerName)})
	}
	m.transport.Send(msgs)
}

// maybeSnapshot takes a raft snapshot and compacts the log once enough
// entries have been applied since the last one. The snapshot's data is the
// key-value state already in bbolt, so only metadata is written; a follower
// that needs it gets a fresh copy of the state (see snapshotSource).
func (m *Member) maybeSnapshot() error {
	applied := m.applied.Load()
	if applied-m.snapIndex.Load() < m.cfg.SnapshotCount {
		return nil
	}
	cs := m.confState()
	snap, err := m.raftStorage.CreateSnapshot(applied, cs, nil)
	if err != nil {
		if err == raft.ErrSnapOutOfDate {
			return nil
		}
		return fmt.Errorf("create snapshot at %d: %w", applied, err)
	}
	compactTo := uint64(1)
	if applied > m.cfg.SnapshotCatchUp {
		compactTo = applied - m.cfg.SnapshotCatchUp
	}
	err = m.db.Update(func(tx *bolt.Tx) error {
		if err := raftlog.SaveSnapshot(tx, snap); err != nil {
			return err
		}
		return raftlog.Compact(tx, compactTo)
	})
	if err != nil {
		return fmt.Errorf("save snapshot at %d: %w", applied, err)
	}
	if err := m.raftStorage.Compact(compactTo); err != nil && err != raft.ErrCompacted {
		return fmt.Errorf("compact raft log to %d: %w", compactTo, err)
	}
	m.snapIndex.Store(applied)
	m.events.Publish(Event{Member: m.cfg.Name, Kind: EventSnapshot, Detail: fmt.Sprintf("snapshot at index %d, log compacted to %d", applied, compactTo)})
	return nil
}

// go_ runs f in a goroutine that Stop waits for.
func (m *Member) go_(f func()) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		f()
	}()
}

// ctxFromStop adapts the stop channel for functions that take a context.
func ctxFromStop(stopc <-chan struct{}) stopContext { return stopContext{stopc} }

type stopContext struct{ c <-chan struct{} }

func (s stopContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (s stopContext) Done() <-chan struct{}       { return s.c }
func (s stopContext) Err() error {
	select {
	case <-s.c:
		return ErrStopped
	default:
		return nil
	}
}
func (s stopContext) Value(any) any { return nil }
