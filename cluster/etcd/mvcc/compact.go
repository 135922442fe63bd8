package mvcc

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// Compact discards the history before rev, in memory and in bbolt: every
// key keeps its version at rev (its newest change at or below rev), a key
// deleted before rev disappears. Reads and watches below rev fail with the
// compacted error from then on. It fails with rpctypes.ErrGRPCCompacted if
// rev is not above the current compaction revision and with
// rpctypes.ErrGRPCFutureRev if rev is above the current revision.
//
// etcd compacts in the background in batches and records a scheduled and a
// finished revision so it can resume after a crash; klab compacts in the
// caller's transaction, so both are written together.
func (s *Store) Compact(tx *bolt.Tx, rev int64) (*pb.CompactionResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rev <= s.compactRev {
		return nil, rpctypes.ErrGRPCCompacted
	}
	if rev > s.rev {
		return nil, rpctypes.ErrGRPCFutureRev
	}
	if !tx.Writable() {
		return nil, errReadOnlyTx
	}
	if err := s.compact(tx, rev); err != nil {
		return nil, err
	}
	return &pb.CompactionResponse{Header: &pb.ResponseHeader{Revision: s.rev}}, nil
}

// compact does the work of Compact; the caller holds mu and owns a writable tx.
func (s *Store) compact(tx *bolt.Tx, rev int64) error {
	meta, err := tx.CreateBucketIfNotExists(metaBucketName)
	if err != nil {
		return fmt.Errorf("open meta bucket: %w", err)
	}
	if err := meta.Put(scheduledCompactKeyName, revToBytes(revision{main: rev}, false)); err != nil {
		return fmt.Errorf("write scheduled compaction revision: %w", err)
	}
	keys, err := tx.CreateBucketIfNotExists(keyBucketName)
	if err != nil {
		return fmt.Errorf("open key bucket: %w", err)
	}
	for _, e := range s.ix.compact(rev) {
		if err := keys.Delete(revToBytes(e.rev, e.tombstone)); err != nil {
			return fmt.Errorf("delete compacted revision %d_%d: %w", e.rev.main, e.rev.sub, err)
		}
	}
	if err := meta.Put(finishedCompactKeyName, revToBytes(revision{main: rev}, false)); err != nil {
		return fmt.Errorf("write finished compaction revision: %w", err)
	}
	s.compactRev = rev
	s.lg.Info("finished compaction", "compact-revision", rev)
	return nil
}
