package mvcc

import (
	"fmt"
	"log/slog"
	"sync"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
)

// LeaseTracker is what the store needs from the lessor: to check that a
// lease exists before a put uses it, and to keep each lease's set of keys up
// to date so that revoking the lease can delete them. *lease.Lessor
// implements it; the interface lives here so that package lease does not
// have to be imported by mvcc, nor mvcc by lease.
type LeaseTracker interface {
	// Exists reports whether the lease is granted.
	Exists(id int64) bool
	// Attach records that key is attached to the lease.
	Attach(id int64, key string)
	// Detach records that key is no longer attached to the lease.
	Detach(id int64, key string)
}

// Store is the multi-version key-value store. It is safe for concurrent use:
// writes are serialised by the caller's apply loop and take the write lock;
// reads take the read lock and never touch bbolt.
type Store struct {
	lg *slog.Logger

	mu         sync.RWMutex
	ix         *index
	rev        int64 // current main revision; 1 for an empty store
	compactRev int64 // revisions below this are gone; 0 if never compacted
	lessor     LeaseTracker

	// watchMu guards the fields below. It is never held together with mu,
	// so watch delivery and writes cannot deadlock.
	watchMu      sync.Mutex
	publishedRev int64 // the newest revision watchers may see
	streams      map[*WatchStream]struct{}
}

// Open creates the store's buckets if they are missing (when tx is
// writable) and loads the history from them.
func Open(tx *bolt.Tx, lg *slog.Logger) (*Store, error) {
	lg = componentbase.Logger(lg)
	s := &Store{lg: lg, streams: make(map[*WatchStream]struct{})}
	if err := s.load(tx); err != nil {
		return nil, err
	}
	s.publishedRev = s.rev
	return s, nil
}

// SetLessor connects the store to the lessor and attaches every live key
// that has a lease to it. Call it after the lessor has loaded its leases.
func (s *Store) SetLessor(l LeaseTracker) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lessor = l
	s.attachLeases()
}

// attachLeases tells the lessor about every live key with a lease, as etcd
// does when it restores its store.
func (s *Store) attachLeases() {
	if s.lessor == nil {
		return
	}
	s.ix.tree.Ascend(func(h *keyHistory) bool {
		if e := h.latest(); e != nil && !e.tombstone && e.kv.Lease != 0 {
			if !s.lessor.Exists(e.kv.Lease) {
				s.lg.Warn("key attached to an unknown lease", "key", string(e.kv.Key), "lease", e.kv.Lease)
				return true
			}
			s.lessor.Attach(e.kv.Lease, string(e.kv.Key))
		}
		return true
	})
}

// Restore replaces the whole state with the one in tx's buckets; the member
// calls it after installing a raft snapshot, after the lessor has reloaded
// its leases. Watchers stay: those whose next revision is now below the
// compaction revision get a compacted response, the others continue from
// the new history once the caller calls Publish.
func (s *Store) Restore(tx *bolt.Tx) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(tx); err != nil {
		return fmt.Errorf("restore store: %w", err)
	}
	s.attachLeases()
	return nil
}

// load reads the buckets into a fresh index; the caller holds mu or owns s.
func (s *Store) load(tx *bolt.Tx) error {
	if tx.Writable() {
		for _, name := range [][]byte{keyBucketName, metaBucketName} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
	}
	scheduled, finished, err := readCompactRevs(tx.Bucket(metaBucketName))
	if err != nil {
		return fmt.Errorf("read compaction revision: %w", err)
	}
	ix := newIndex()
	rev := int64(1)
	if b := tx.Bucket(keyBucketName); b != nil {
		err := b.ForEach(func(k, v []byte) error {
			r, tombstone, err := bytesToRev(k)
			if err != nil {
				return fmt.Errorf("key bucket entry %x: %w", k, err)
			}
			kv := &mvccpb.KeyValue{}
			if err := proto.Unmarshal(v, kv); err != nil {
				return fmt.Errorf("decode key-value at revision %d_%d: %w", r.main, r.sub, err)
			}
			ix.add(&entry{rev: r, tombstone: tombstone, kv: kv})
			rev = max(rev, r.main)
			return nil
		})
		if err != nil {
			return fmt.Errorf("load key bucket: %w", err)
		}
	}
	s.ix = ix
	// A compaction may have removed the newest changes (a delete followed
	// by a compaction at that revision), so the compaction revision also
	// bounds the current one, as in etcd's restore.
	s.rev = max(rev, finished, scheduled)
	s.compactRev = finished
	if scheduled > finished {
		// etcd compacts in the background and may crash half-way; klab
		// compacts in one transaction, but finish the job if a db says so.
		if !tx.Writable() {
			return fmt.Errorf("db has an unfinished compaction at revision %d and is open read-only", scheduled)
		}
		if err := s.compact(tx, scheduled); err != nil {
			return err
		}
	}
	return nil
}

// Rev returns the current revision.
func (s *Store) Rev() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rev
}

// CompactRev returns the compaction revision: reads and watches below it
// fail with the compacted error. It is 0 if the store was never compacted.
func (s *Store) CompactRev() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.compactRev
}

// Stats returns the number of live keys and the number of changes kept in
// history (puts and tombstones since the compaction revision).
func (s *Store) Stats() (keys int, revisions int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	s.ix.tree.Ascend(func(h *keyHistory) bool {
		if e := h.latest(); e != nil && !e.tombstone {
			keys++
		}
		return true
	})
	return keys, len(s.ix.log)
}

// Publish makes every revision written so far visible to watchers. The
// caller calls it only for changes that a crash can no longer undo: raft
// entries committed by a quorum (see the package comment).
func (s *Store) Publish() {
	rev := s.Rev()
	s.watchMu.Lock()
	s.publishedRev = rev
	streams := make([]*WatchStream, 0, len(s.streams))
	for ws := range s.streams {
		streams = append(streams, ws)
	}
	s.watchMu.Unlock()
	for _, ws := range streams {
		ws.notify()
	}
}

// published returns the newest revision watchers may see.
func (s *Store) published() int64 {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	return s.publishedRev
}
