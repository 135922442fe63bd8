package lease_test

import (
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/klab-dev/klab/cluster/etcd/lease"
	"github.com/klab-dev/klab/cluster/etcd/mvcc"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// member is the part of an etcd member this package works with: one bbolt
// file, a store and a lessor wired together as the member wires them.
type member struct {
	t      *testing.T
	path   string
	db     *bolt.DB
	store  *mvcc.Store
	lessor *lease.Lessor
	clock  *fakeClock
}

func newMember(t *testing.T) *member {
	m := &member{t: t, path: filepath.Join(t.TempDir(), "db"), clock: &fakeClock{now: time.Unix(1000, 0)}}
	m.open()
	t.Cleanup(func() { m.db.Close() })
	return m
}

func (m *member) open() {
	m.t.Helper()
	db, err := bolt.Open(m.path, 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		m.t.Fatal(err)
	}
	m.db = db
	m.lessor = lease.NewLessor(5, nil)
	lease.SetClock(m.lessor, m.clock.Now)
	m.update(func(tx *bolt.Tx) error {
		if err := m.lessor.Open(tx); err != nil {
			return err
		}
		s, err := mvcc.Open(tx, nil)
		m.store = s
		return err
	})
	m.store.SetLessor(m.lessor)
}

func (m *member) reopen() {
	m.t.Helper()
	if err := m.db.Close(); err != nil {
		m.t.Fatal(err)
	}
	m.open()
}

func (m *member) update(f func(tx *bolt.Tx) error) {
	m.t.Helper()
	if err := m.db.Update(f); err != nil {
		m.t.Fatalf("update: %v", err)
	}
	if m.store != nil {
		m.store.Publish()
	}
}

func (m *member) grant(id, ttl int64) *lease.Lease {
	m.t.Helper()
	var l *lease.Lease
	m.update(func(tx *bolt.Tx) (err error) {
		l, err = m.lessor.Grant(tx, id, ttl)
		return err
	})
	return l
}

func (m *member) put(key string, leaseID int64) {
	m.t.Helper()
	m.update(func(tx *bolt.Tx) error {
		_, err := m.store.Put(tx, &pb.PutRequest{Key: []byte(key), Value: []byte("v"), Lease: leaseID})
		return err
	})
}

func (m *member) keys() []string {
	m.t.Helper()
	resp, err := m.store.Range(&pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}})
	if err != nil {
		m.t.Fatal(err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		out = append(out, string(kv.Key))
	}
	return out
}

func TestGrant(t *testing.T) {
	m := newMember(t)
	tests := []struct {
		name    string
		id, ttl int64
		wantTTL int64
		wantErr error
	}{
		{name: "ttl kept", id: 1, ttl: 60, wantTTL: 60},
		{name: "ttl raised to minimum", id: 2, ttl: 1, wantTTL: 5},
		{name: "existing id", id: 1, ttl: 60, wantErr: rpctypes.ErrGRPCLeaseExist},
		{name: "id 0", id: 0, ttl: 60, wantErr: rpctypes.ErrGRPCLeaseNotFound},
		{name: "ttl too large", id: 3, ttl: lease.MaxLeaseTTL + 1, wantErr: rpctypes.ErrGRPCLeaseTTLTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l *lease.Lease
			err := m.db.Update(func(tx *bolt.Tx) (err error) {
				l, err = m.lessor.Grant(tx, tt.id, tt.ttl)
				return err
			})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err == nil && (l.ID != tt.id || l.TTL != tt.wantTTL) {
				t.Errorf("lease = %+v, want ID %d TTL %d", l, tt.id, tt.wantTTL)
			}
		})
	}
	if got := m.lessor.Lookup(2); got == nil || got.TTL != 5 || !got.Expiry.IsZero() {
		t.Errorf("lookup = %+v, want TTL 5 without expiry on a follower", got)
	}
	if got := len(m.lessor.Leases()); got != 2 {
		t.Errorf("%d leases, want 2", got)
	}
}

func TestRevokeDeletesKeysInOneRevision(t *testing.T) {
	m := newMember(t)
	m.grant(7, 60)
	m.put("c", 7)
	m.put("a", 7)
	m.put("b", 0)
	m.put("d", 7)
	m.put("d", 0) // detached again
	rev := m.store.Rev()

	ws := m.store.NewWatchStream()
	defer ws.Close()
	if _, err := ws.Watch(&pb.WatchCreateRequest{Key: []byte{0}, RangeEnd: []byte{0}}); err != nil {
		t.Fatal(err)
	}
	<-ws.Chan() // created

	m.update(func(tx *bolt.Tx) error { return m.lessor.Revoke(tx, 7, m.store) })
	if got := m.store.Rev(); got != rev+1 {
		t.Errorf("revision after revoke = %d, want %d (one revision)", got, rev+1)
	}
	if got := m.keys(); !slices.Equal(got, []string{"b", "d"}) {
		t.Errorf("keys after revoke = %q, want [b d]", got)
	}
	if m.lessor.Lookup(7) != nil || m.lessor.Exists(7) {
		t.Error("lease still exists after revoke")
	}
	resp := <-ws.Chan()
	var deleted []string
	for _, ev := range resp.Events {
		deleted = append(deleted, string(ev.Kv.Key))
		if ev.Kv.ModRevision != rev+1 {
			t.Errorf("delete of %s at %d, want %d", ev.Kv.Key, ev.Kv.ModRevision, rev+1)
		}
	}
	if !slices.Equal(deleted, []string{"a", "c"}) {
		t.Errorf("delete events = %q, want [a c] in one response", deleted)
	}
	err := m.db.Update(func(tx *bolt.Tx) error { return m.lessor.Revoke(tx, 7, m.store) })
	if !errors.Is(err, rpctypes.ErrGRPCLeaseNotFound) {
		t.Errorf("second revoke: %v", err)
	}
	m.reopen()
	if m.lessor.Lookup(7) != nil {
		t.Error("revoked lease back after reopen")
	}
}

func TestReopenKeepsLeasesAndAttachments(t *testing.T) {
	m := newMember(t)
	m.grant(1, 30)
	m.grant(2, 40)
	m.put("x", 1)
	m.put("y", 1)
	m.put("z", 2)
	m.reopen()
	leases := m.lessor.Leases()
	if len(leases) != 2 || leases[0].ID != 1 || leases[0].TTL != 30 || leases[1].TTL != 40 {
		t.Fatalf("leases after reopen = %+v", leases)
	}
	granted, _, keys, err := m.lessor.TimeToLive(1)
	if !errors.Is(err, lease.ErrNotPrimary) || granted != 30 || len(keys) != 2 || string(keys[0]) != "x" || string(keys[1]) != "y" {
		t.Errorf("time to live of 1 = %d %q %v", granted, keys, err)
	}
	// Revoking after the reopen still finds the keys.
	m.update(func(tx *bolt.Tx) error { return m.lessor.Revoke(tx, 1, m.store) })
	if got := m.keys(); !slices.Equal(got, []string{"z"}) {
		t.Errorf("keys = %q, want [z]", got)
	}
}

func TestExpiryOnlyOnPromotedLessor(t *testing.T) {
	m := newMember(t)
	m.grant(1, 10)
	m.grant(2, 20)
	m.clock.Advance(time.Hour)
	if got := m.lessor.Expired(); len(got) != 0 {
		t.Fatalf("follower reports expired leases %v", got)
	}
	if _, err := m.lessor.Renew(1); !errors.Is(err, lease.ErrNotPrimary) {
		t.Errorf("renew on a follower: %v, want %v", err, lease.ErrNotPrimary)
	}

	m.lessor.Promote(2 * time.Second)
	steps := []struct {
		name    string
		advance time.Duration
		renew   int64
		want    []int64
	}{
		{name: "nothing expired yet", advance: 11 * time.Second},
		{name: "lease 1 expired after ttl plus extend", advance: time.Second, want: []int64{1}},
		{name: "not reported again within the retry interval", advance: time.Second},
		{name: "renewed lease 2 lives on", advance: 5 * time.Second, renew: 2, want: []int64{1}},
		{name: "lease 2 expires ttl after renew", advance: 20 * time.Second, want: []int64{1, 2}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			m.clock.Advance(st.advance)
			if st.renew != 0 {
				ttl, err := m.lessor.Renew(st.renew)
				if err != nil || ttl != 20 {
					t.Fatalf("renew = %d, %v", ttl, err)
				}
			}
			if got := m.lessor.Expired(); !slices.Equal(got, st.want) {
				t.Errorf("expired = %v, want %v", got, st.want)
			}
		})
	}
	if _, err := m.lessor.Renew(1); !errors.Is(err, rpctypes.ErrGRPCLeaseNotFound) {
		t.Errorf("renew of an expired lease: %v, want %v", err, rpctypes.ErrGRPCLeaseNotFound)
	}
	m.lessor.Demote()
	if got := m.lessor.Expired(); len(got) != 0 {
		t.Errorf("demoted lessor reports %v", got)
	}
	if l := m.lessor.Lookup(1); !l.Expiry.IsZero() {
		t.Errorf("demoted lessor tracks expiry %v", l.Expiry)
	}
}

func TestTimeToLiveOnLeader(t *testing.T) {
	m := newMember(t)
	m.lessor.Promote(0)
	m.grant(1, 60)
	m.put("k", 1)
	m.clock.Advance(15500 * time.Millisecond)
	granted, remaining, keys, err := m.lessor.TimeToLive(1)
	if err != nil || granted != 60 || remaining != 44 || len(keys) != 1 {
		t.Errorf("time to live = %d %d %q %v, want 60 44 [k]", granted, remaining, keys, err)
	}
	if _, _, _, err := m.lessor.TimeToLive(9); !errors.Is(err, rpctypes.ErrGRPCLeaseNotFound) {
		t.Errorf("unknown lease: %v", err)
	}
}

func TestExpiredBatchIsBounded(t *testing.T) {
	m := newMember(t)
	m.lessor.Promote(0)
	for id := int64(1); id <= 40; id++ {
		m.grant(id, 10)
	}
	m.clock.Advance(11 * time.Second)
	first := m.lessor.Expired()
	second := m.lessor.Expired()
	third := m.lessor.Expired()
	if len(first) != 16 || len(second) != 16 || len(third) != 8 {
		t.Fatalf("batches of %d, %d, %d, want 16, 16, 8", len(first), len(second), len(third))
	}
	seen := map[int64]bool{}
	for _, id := range slices.Concat(first, second, third) {
		if seen[id] {
			t.Errorf("lease %d reported twice", id)
		}
		seen[id] = true
	}
}
