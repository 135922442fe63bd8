package etcd

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/klab-dev/klab/cluster/etcd/mvcc"
	"github.com/klab-dev/klab/cluster/etcd/raftlog"
)

// kvBuckets are the buckets of etcd's backend schema that make up the
// key-value state: what a snapshot carries, to a follower or to etcdctl.
var kvBuckets = [][]byte{
	[]byte("key"), []byte("meta"), []byte("lease"), membersBucket, membersRemovedBucket, alarmBucket,
}

// kvSnapshot writes the key-value state, as of one consistent moment, into a
// new bbolt file at path and returns the raft index and term it reflects.
func (m *Member) kvSnapshot(path string) (index, term uint64, cs *raftpb.ConfState, err error) {
	m.dbMu.RLock()
	defer m.dbMu.RUnlock()
	src, err := m.db.Begin(false)
	if err != nil {
		return 0, 0, nil, err
	}
	defer src.Rollback()
	index, term = mvcc.ReadConsistentIndex(src)
	cs, err = raftlog.LoadConfState(src)
	if err != nil {
		return 0, 0, nil, err
	}
	dst, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		return 0, 0, nil, fmt.Errorf("create snapshot file %s: %w", path, err)
	}
	err = dst.Update(func(tx *bolt.Tx) error {
		for _, name := range kvBuckets {
			sb := src.Bucket(name)
			if sb == nil {
				continue
			}
			db, err := tx.CreateBucketIfNotExists(name)
			if err != nil {
				return err
			}
			db.FillPercent = 0.9
			if err := sb.ForEach(func(k, v []byte) error { return db.Put(k, v) }); err != nil {
				return err
			}
		}
		return nil
	})
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return 0, 0, nil, fmt.Errorf("write snapshot file %s: %w", path, err)
	}
	return index, term, cs, nil
}

func (m *Member) snapDir() string { return filepath.Join(m.cfg.DataDir, "snap") }

// snapshotSource produces the payload of an outgoing MsgSnap. As etcd does,
// the leader sends its current state rather than the state at the raft
// snapshot's index (which it no longer has), and rewrites the message's
// metadata to match; the follower answers with the newer index and the
// leader carries on from there.
func (m *Member) snapshotSource(msg *raftpb.Message) (io.ReadCloser, error) {
	if err := os.MkdirAll(m.snapDir(), 0o700); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(m.snapDir(), "outgoing-*.db")
	if err != nil {
		return nil, err
	}
	path := f.Name()
	f.Close()
	os.Remove(path)
	index, term, cs, err := m.kvSnapshot(path)
	if err != nil {
		return nil, err
	}
	msg.Snapshot = &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{Index: &index, Term: &term, ConfState: cs}}
	m.events.Publish(Event{Member: m.cfg.Name, Kind: EventSnapshot, Detail: fmt.Sprintf("sending snapshot at index %d to %s", index, m.peerName(msg.GetTo()))})
	rf, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &removeOnClose{File: rf}, nil
}

type removeOnClose struct{ *os.File }

func (r *removeOnClose) Close() error {
	err := r.File.Close()
	os.Remove(r.Name())
	return err
}

func (m *Member) incomingSnapPath(index uint64) string {
	return filepath.Join(m.snapDir(), strconv.FormatUint(index, 10)+".db")
}

// saveIncomingSnapshot stores the payload of a MsgSnap until raft hands the
// snapshot back in a Ready.
//
// Each receive writes its own temporary file and renames it into place:
// two snapshots for the same index can arrive at once (a deposed leader's
// transfer still in flight when the new leader, at the same applied index,
// sends its own), and with one shared ".part" file the second truncated
// and renamed it under the first, leaving raft a file made of both.
func (m *Member) saveIncomingSnapshot(msg *raftpb.Message, payload io.Reader) error {
	if err := os.MkdirAll(m.snapDir(), 0o700); err != nil {
		return err
	}
	index := msg.GetSnapshot().GetMetadata().GetIndex()
	final := m.incomingSnapPath(index)
	f, err := os.CreateTemp(m.snapDir(), strconv.FormatUint(index, 10)+".db.*.part")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = io.Copy(f, payload)
	if err == nil && !m.cfg.NoFsync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("receive snapshot: %w", err)
	}
	return nil
}

// installSnapshot replaces the key-value state with the snapshot's, inside
// the Ready's transaction.
func (m *Member) installSnapshot(tx *bolt.Tx, snap *raftpb.Snapshot) error {
	index := snap.GetMetadata().GetIndex()
	path := m.incomingSnapPath(index)
	src, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("open received snapshot %s: %w", path, err)
	}
	defer src.Close()
	err = src.View(func(stx *bolt.Tx) error {
		for _, name := range kvBuckets {
			if tx.Bucket(name) != nil {
				if err := tx.DeleteBucket(name); err != nil {
					return err
				}
			}
			b, err := tx.CreateBucket(name)
			if err != nil {
				return err
			}
			if sb := stx.Bucket(name); sb != nil {
				// bbolt keeps references to what Put is given until the
				// transaction commits, and the snapshot file is closed
				// before that: copy.
				err := sb.ForEach(func(k, v []byte) error {
					return b.Put(append([]byte(nil), k...), append([]byte(nil), v...))
				})
				if err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("install snapshot at %d: %w", index, err)
	}
	if err := mvcc.WriteConsistentIndex(tx, index, snap.GetMetadata().GetTerm()); err != nil {
		return err
	}
	// Leases first: restoring the store re-attaches keys to them.
	if err := m.lessor.Open(tx); err != nil {
		return fmt.Errorf("restore leases from snapshot: %w", err)
	}
	if err := m.store.Restore(tx); err != nil {
		return fmt.Errorf("restore key-value store from snapshot: %w", err)
	}
	if err := m.members.load(tx); err != nil {
		return err
	}
	if err := m.alarms.load(tx); err != nil {
		return fmt.Errorf("restore alarms from snapshot: %w", err)
	}
	if err := raftlog.Reset(tx); err != nil {
		return err
	}
	if err := raftlog.SaveSnapshot(tx, snap); err != nil {
		return err
	}
	cs := snap.GetMetadata().GetConfState()
	if cs == nil {
		cs = &raftpb.ConfState{}
	}
	return raftlog.SaveConfState(tx, proto.Clone(cs).(*raftpb.ConfState))
}

// afterSnapshotInstalled runs once the installed snapshot is committed.
func (m *Member) afterSnapshotInstalled(snap *raftpb.Snapshot) {
	md := snap.GetMetadata()
	m.applied.Store(md.GetIndex())
	m.persisted.Store(md.GetIndex())
	m.persistedNotify.notify()
	m.appliedTerm.Store(md.GetTerm())
	m.setConfState(md.GetConfState())
	m.store.Publish()
	m.appliedNotify.notify()
	m.syncTransportPeers()
	os.Remove(m.incomingSnapPath(md.GetIndex()))
	m.events.Publish(Event{Member: m.cfg.Name, Kind: EventSnapshot, Detail: fmt.Sprintf("installed snapshot at index %d", md.GetIndex())})
}

// syncTransportPeers makes the transport's peers match the membership.
func (m *Member) syncTransportPeers() {
	want := map[uint64]string{}
	for _, mi := range m.members.list() {
		if mi.ID != m.id && len(mi.PeerURLs) > 0 {
			want[mi.ID] = mi.PeerURLs[0]
		}
	}
	m.peersMu.Lock()
	defer m.peersMu.Unlock()
	for id, url := range want {
		if old, ok := m.peers[id]; !ok {
			m.transport.AddPeer(id, url)
		} else if old != url {
			m.transport.UpdatePeer(id, url)
		}
	}
	for id := range m.peers {
		if _, ok := want[id]; !ok {
			m.transport.RemovePeer(id)
		}
	}
	m.peers = want
}

// writeSnapshotStream writes the key-value state for etcdctl snapshot save:
// a bbolt database followed by its SHA-256, as etcd's snapshot stream is.
func (m *Member) writeSnapshotStream(ctx context.Context, w io.Writer) (int64, error) {
	// Writes are answered once applied, before their transaction is
	// committed; the snapshot reads the committed database. Like etcd's,
	// which commits its backend's batch first, it must hold every write
	// already answered.
	if err := m.waitPersisted(ctx, m.applied.Load()); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(m.snapDir(), 0o700); err != nil {
		return 0, err
	}
	f, err := os.CreateTemp(m.snapDir(), "client-*.db")
	if err != nil {
		return 0, err
	}
	path := f.Name()
	f.Close()
	os.Remove(path)
	defer os.Remove(path)
	if _, _, _, err := m.kvSnapshot(path); err != nil {
		return 0, err
	}
	rf, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer rf.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), &ctxReader{ctx: ctx, r: rf})
	if err != nil {
		return n, err
	}
	k, err := w.Write(h.Sum(nil))
	return n + int64(k), err
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// waitPersisted waits until the apply transaction of index is committed.
func (m *Member) waitPersisted(ctx context.Context, index uint64) error {
	for {
		c := m.persistedNotify.wait()
		if m.persisted.Load() >= index {
			return nil
		}
		select {
		case <-c:
		case <-ctx.Done():
			return ctx.Err()
		case <-m.stopc:
			return rpctypes.ErrGRPCStopped
		}
	}
}
