package lease

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/server/v3/lease/leasepb"
	"google.golang.org/protobuf/proto"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
)

// MaxLeaseTTL is the largest TTL a lease may be granted with, as in etcd.
const MaxLeaseTTL = 9000000000

// ErrNotPrimary is returned by Renew and TimeToLive on a lessor that is not
// the leader's: the member forwards the request to the leader, or answers
// with rpctypes.ErrGRPCNotLeader.
var ErrNotPrimary = errors.New("not a primary lessor")

// leaseBucketName is etcd's bucket for leases.
var leaseBucketName = []byte("lease")

const (
	// expiredLeaseRetryInterval is how long Expired waits before reporting
	// the same lease again, giving the revocation time to go through raft;
	// etcd's default.
	expiredLeaseRetryInterval = 3 * time.Second
	// maxExpiredBatch bounds the leases reported by one Expired call, so
	// that a pile of expired leases does not flood raft.
	maxExpiredBatch = 16
)

// KeyDeleter deletes keys in one MVCC revision; *mvcc.Store implements it.
type KeyDeleter interface {
	DeleteKeys(tx *bolt.Tx, keys [][]byte) error
}

// Lease is a snapshot of one lease.
type Lease struct {
	// ID identifies the lease.
	ID int64
	// TTL is the granted time to live in seconds, after raising it to the
	// lessor's minimum.
	TTL int64
	// Expiry is when the lease expires; zero when this lessor does not
	// track expiry (it is not the leader's).
	Expiry time.Time
}

// Remaining returns the time left before the lease expires, or the
// largest duration when expiry is not tracked, as etcd's does.
func (l *Lease) Remaining() time.Duration {
	if l.Expiry.IsZero() {
		return time.Duration(math.MaxInt64)
	}
	return time.Until(l.Expiry)
}

// lease is the lessor's record of one lease.
type lease struct {
	id     int64
	ttl    int64
	expiry time.Time // zero: forever
	// retryAt holds back reporting the lease as expired again while its
	// revocation is on its way through raft.
	retryAt time.Time
	keys    map[string]struct{}
}

func (l *lease) snapshot() *Lease {
	return &Lease{ID: l.id, TTL: l.ttl, Expiry: l.expiry}
}

// Lessor owns the leases of one member. It is safe for concurrent use.
type Lessor struct {
	lg     *slog.Logger
	minTTL int64
	// now is the clock; tests replace it.
	now func() time.Time

	mu      sync.RWMutex
	leases  map[int64]*lease
	primary bool
}

// NewLessor returns an empty lessor that raises every TTL below minTTL
// seconds to minTTL. Call Open to load the stored leases.
func NewLessor(minTTL int64, lg *slog.Logger) *Lessor {
	lg = componentbase.Logger(lg)
	return &Lessor{lg: lg, minTTL: minTTL, now: time.Now, leases: make(map[int64]*lease)}
}

// Open replaces the lessor's leases with those stored in tx (bucket
// "lease", created if tx is writable). The member calls it at start and
// after installing a raft snapshot, before the MVCC store attaches its keys.
func (l *Lessor) Open(tx *bolt.Tx) error {
	b := tx.Bucket(leaseBucketName)
	if b == nil && tx.Writable() {
		var err error
		if b, err = tx.CreateBucket(leaseBucketName); err != nil {
			return fmt.Errorf("create lease bucket: %w", err)
		}
	}
	leases := make(map[int64]*lease)
	if b != nil {
		err := b.ForEach(func(k, v []byte) error {
			var lpb leasepb.Lease
			if err := proto.Unmarshal(v, &lpb); err != nil {
				return fmt.Errorf("decode lease %x: %w", k, err)
			}
			leases[lpb.ID] = &lease{id: lpb.ID, ttl: lpb.TTL, keys: make(map[string]struct{})}
			return nil
		})
		if err != nil {
			return fmt.Errorf("load leases: %w", err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leases = leases
	if l.primary {
		now := l.now()
		for _, ls := range leases {
			ls.expiry = now.Add(time.Duration(ls.ttl) * time.Second)
		}
	}
	return nil
}

// Grant creates a lease; the member has chosen its ID before proposing. A
// TTL below the minimum is raised to it, as in etcd. Errors:
// rpctypes.ErrGRPCLeaseNotFound for ID 0, rpctypes.ErrGRPCLeaseTTLTooLarge,
// rpctypes.ErrGRPCLeaseExist.
func (l *Lessor) Grant(tx *bolt.Tx, id, ttl int64) (*Lease, error) {
	if id == 0 {
		return nil, rpctypes.ErrGRPCLeaseNotFound
	}
	if ttl > MaxLeaseTTL {
		return nil, rpctypes.ErrGRPCLeaseTTLTooLarge
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.leases[id]; ok {
		return nil, rpctypes.ErrGRPCLeaseExist
	}
	ls := &lease{id: id, ttl: max(ttl, l.minTTL), keys: make(map[string]struct{})}
	if err := persist(tx, ls); err != nil {
		return nil, err
	}
	if l.primary {
		ls.expiry = l.now().Add(time.Duration(ls.ttl) * time.Second)
	}
	l.leases[id] = ls
	return ls.snapshot(), nil
}

// Revoke deletes every key attached to the lease, in one MVCC revision and
// in sorted order so that every member writes the same revisions, then the
// lease itself, all in tx. It fails with rpctypes.ErrGRPCLeaseNotFound.
func (l *Lessor) Revoke(tx *bolt.Tx, id int64, del KeyDeleter) error {
	l.mu.RLock()
	ls, ok := l.leases[id]
	var keys []string
	if ok {
		keys = make([]string, 0, len(ls.keys))
		for k := range ls.keys {
			keys = append(keys, k)
		}
	}
	l.mu.RUnlock()
	if !ok {
		return rpctypes.ErrGRPCLeaseNotFound
	}
	sort.Strings(keys)
	if del != nil && len(keys) > 0 {
		bkeys := make([][]byte, len(keys))
		for i, k := range keys {
			bkeys[i] = []byte(k)
		}
		// The store detaches each key from the lease as it deletes it, so
		// the lessor's lock must not be held here.
		if err := del.DeleteKeys(tx, bkeys); err != nil {
			return fmt.Errorf("revoke lease %016x: %w", id, err)
		}
	}
	b, err := tx.CreateBucketIfNotExists(leaseBucketName)
	if err != nil {
		return fmt.Errorf("open lease bucket: %w", err)
	}
	if err := b.Delete(idBytes(id)); err != nil {
		return fmt.Errorf("delete lease %016x: %w", id, err)
	}
	l.mu.Lock()
	delete(l.leases, id)
	l.mu.Unlock()
	return nil
}

// persist writes a lease as etcd does: ID and TTL, no remaining TTL since
// klab does not checkpoint.
func persist(tx *bolt.Tx, ls *lease) error {
	b, err := tx.CreateBucketIfNotExists(leaseBucketName)
	if err != nil {
		return fmt.Errorf("open lease bucket: %w", err)
	}
	data, err := proto.Marshal(&leasepb.Lease{ID: ls.id, TTL: ls.ttl})
	if err != nil {
		return fmt.Errorf("marshal lease %016x: %w", ls.id, err)
	}
	if err := b.Put(idBytes(ls.id), data); err != nil {
		return fmt.Errorf("store lease %016x: %w", ls.id, err)
	}
	return nil
}

func idBytes(id int64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, uint64(id))
	return b
}

// Exists reports whether the lease is granted.
func (l *Lessor) Exists(id int64) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	_, ok := l.leases[id]
	return ok
}

// Attach records that key is attached to the lease; the MVCC store calls it
// when a put gives a key this lease. An unknown lease is ignored.
func (l *Lessor) Attach(id int64, key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ls, ok := l.leases[id]; ok {
		ls.keys[key] = struct{}{}
	}
}

// Detach records that key no longer belongs to the lease: it was deleted or
// put with another lease.
func (l *Lessor) Detach(id int64, key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ls, ok := l.leases[id]; ok {
		delete(ls.keys, key)
	}
}

// Lookup returns a snapshot of the lease, or nil if it does not exist.
func (l *Lessor) Lookup(id int64) *Lease {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if ls, ok := l.leases[id]; ok {
		return ls.snapshot()
	}
	return nil
}

// Leases returns snapshots of all leases, soonest to expire first (by ID
// when expiry is not tracked), as etcd orders them.
func (l *Lessor) Leases() []*Lease {
	l.mu.RLock()
	out := make([]*Lease, 0, len(l.leases))
	for _, ls := range l.leases {
		out = append(out, ls.snapshot())
	}
	l.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Expiry.Equal(out[j].Expiry) {
			return expiresBefore(out[i].Expiry, out[j].Expiry)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// expiresBefore orders expiry times with zero (forever) last.
func expiresBefore(a, b time.Time) bool {
	switch {
	case a.IsZero():
		return false
	case b.IsZero():
		return true
	}
	return a.Before(b)
}
