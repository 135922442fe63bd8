// Package raftlog keeps a member's raft log, hard state and snapshot metadata
// in bbolt, next to the key-value state they produce.
//
// The raft library reads the log through a raft.MemoryStorage; this package is
// its durable twin. Every write goes into a bbolt transaction that the member
// opens for one Ready and commits once, together with the key-value changes of
// the entries that Ready applies, so that the log, the hard state and the
// applied state are always persisted as one.
package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Bucket names. They carry a klab_ prefix so that they never clash with the
// buckets of etcd's own backend schema, which the key-value state uses.
var (
	logBucket   = []byte("klab_raft_log")
	stateBucket = []byte("klab_raft_state")

	hardStateKey = []byte("hardstate")
	snapshotKey  = []byte("snapshot") // metadata only; the data is the KV state
)

// CreateBuckets makes sure the buckets exist.
func CreateBuckets(tx *bolt.Tx) error {
	for _, b := range [][]byte{logBucket, stateBucket} {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return fmt.Errorf("create bucket %s: %w", b, err)
		}
	}
	return nil
}

func indexKey(i uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], i)
	return k[:]
}

// Save persists what one Ready asks to persist: the hard state (if not
// empty) and new entries. An entry at index i replaces every persisted entry
// at i or after, as the raft contract requires.
func Save(tx *bolt.Tx, hs *raftpb.HardState, ents []*raftpb.Entry) error {
	if hs != nil && !raft.IsEmptyHardState(hs) {
		b, err := proto.Marshal(hs)
		if err != nil {
			return fmt.Errorf("marshal hard state: %w", err)
		}
		if err := tx.Bucket(stateBucket).Put(hardStateKey, b); err != nil {
			return fmt.Errorf("save hard state: %w", err)
		}
	}
	if len(ents) == 0 {
		return nil
	}
	log := tx.Bucket(logBucket)
	// Drop the conflicting suffix first.
	c := log.Cursor()
	for k, _ := c.Seek(indexKey(ents[0].GetIndex())); k != nil; k, _ = c.Next() {
		if err := c.Delete(); err != nil {
			return fmt.Errorf("truncate log: %w", err)
		}
	}
	for _, e := range ents {
		b, err := proto.Marshal(e)
		if err != nil {
			return fmt.Errorf("marshal entry %d: %w", e.GetIndex(), err)
		}
		if err := log.Put(indexKey(e.GetIndex()), b); err != nil {
			return fmt.Errorf("save entry %d: %w", e.GetIndex(), err)
		}
	}
	return nil
}

// SaveSnapshot records the metadata of a snapshot. The snapshot's data is the
// key-value state itself, so only the metadata is stored.
func SaveSnapshot(tx *bolt.Tx, snap *raftpb.Snapshot) error {
	meta := &raftpb.Snapshot{Metadata: snap.GetMetadata()}
	b, err := proto.Marshal(meta)
	if err != nil {
		return fmt.Errorf("marshal snapshot metadata: %w", err)
	}
	return tx.Bucket(stateBucket).Put(snapshotKey, b)
}

// Compact deletes every log entry below index.
func Compact(tx *bolt.Tx, index uint64) error {
	c := tx.Bucket(logBucket).Cursor()
	for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) < index; k, _ = c.Next() {
		if err := c.Delete(); err != nil {
			return fmt.Errorf("compact log below %d: %w", index, err)
		}
	}
	return nil
}

// Reset deletes the whole log: after installing a snapshot from the leader
// nothing of the old log is valid.
func Reset(tx *bolt.Tx) error {
	if err := tx.DeleteBucket(logBucket); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
		return fmt.Errorf("reset log: %w", err)
	}
	_, err := tx.CreateBucket(logBucket)
	return err
}

// State is everything needed to restart a raft node.
type State struct {
	HardState *raftpb.HardState
	Snapshot  *raftpb.Snapshot
	Entries   []*raftpb.Entry
}

// Empty reports whether nothing was ever persisted: a fresh member.
func (s *State) Empty() bool {
	return raft.IsEmptyHardState(s.HardState) && raft.IsEmptySnap(s.Snapshot) && len(s.Entries) == 0
}

// Load reads the persisted raft state.
func Load(tx *bolt.Tx) (*State, error) {
	st := &State{HardState: &raftpb.HardState{}, Snapshot: &raftpb.Snapshot{}}
	state := tx.Bucket(stateBucket)
	if b := state.Get(hardStateKey); b != nil {
		if err := proto.Unmarshal(b, st.HardState); err != nil {
			return nil, fmt.Errorf("decode hard state: %w", err)
		}
	}
	if b := state.Get(snapshotKey); b != nil {
		if err := proto.Unmarshal(b, st.Snapshot); err != nil {
			return nil, fmt.Errorf("decode snapshot metadata: %w", err)
		}
	}
	snapIndex := st.Snapshot.GetMetadata().GetIndex()
	err := tx.Bucket(logBucket).ForEach(func(k, v []byte) error {
		if binary.BigEndian.Uint64(k) <= snapIndex {
			return nil
		}
		e := &raftpb.Entry{}
		if err := proto.Unmarshal(v, e); err != nil {
			return fmt.Errorf("decode entry %d: %w", binary.BigEndian.Uint64(k), err)
		}
		st.Entries = append(st.Entries, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The log must be contiguous and follow the snapshot.
	next := snapIndex + 1
	for _, e := range st.Entries {
		if e.GetIndex() != next {
			return nil, fmt.Errorf("raft log has a gap: expected entry %d, found %d", next, e.GetIndex())
		}
		next++
	}
	return st, nil
}

// Restore fills a MemoryStorage from a loaded state.
func Restore(ms *raft.MemoryStorage, st *State) error {
	if !raft.IsEmptySnap(st.Snapshot) {
		if err := ms.ApplySnapshot(st.Snapshot); err != nil {
			return fmt.Errorf("restore snapshot: %w", err)
		}
	}
	if !raft.IsEmptyHardState(st.HardState) {
		if err := ms.SetHardState(st.HardState); err != nil {
			return fmt.Errorf("restore hard state: %w", err)
		}
	}
	if len(st.Entries) > 0 {
		if err := ms.Append(st.Entries); err != nil {
			return fmt.Errorf("restore entries: %w", err)
		}
	}
	return nil
}

var confStateKey = []byte("confstate")

// SaveConfState records the configuration in force after the entries applied
// in the same transaction, so a snapshot taken from that state can carry it.
func SaveConfState(tx *bolt.Tx, cs *raftpb.ConfState) error {
	b, err := proto.Marshal(cs)
	if err != nil {
		return fmt.Errorf("marshal conf state: %w", err)
	}
	return tx.Bucket(stateBucket).Put(confStateKey, b)
}

// LoadConfState returns the configuration saved by SaveConfState, or an empty
// one.
func LoadConfState(tx *bolt.Tx) (*raftpb.ConfState, error) {
	cs := &raftpb.ConfState{}
	if b := tx.Bucket(stateBucket).Get(confStateKey); b != nil {
		if err := proto.Unmarshal(b, cs); err != nil {
			return nil, fmt.Errorf("decode conf state: %w", err)
		}
	}
	return cs, nil
}
