package mvcc

import (
	"errors"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/klab-dev/klab/cluster/etcd/lease"
)

func TestPutDeleteRevisions(t *testing.T) {
	ts := newTestStore(t)
	if got := ts.s.Rev(); got != 1 {
		t.Fatalf("empty store revision = %d, want 1", got)
	}
	type step struct {
		name    string
		do      func() int64 // returns the response header revision
		wantRev int64
		key     string
		// want the key's state after the step; version 0 means absent.
		create, mod, version int64
	}
	steps := []step{
		{name: "create", do: func() int64 { return ts.put("k", "v1").Header.Revision }, wantRev: 2, key: "k", create: 2, mod: 2, version: 1},
		{name: "update", do: func() int64 { return ts.put("k", "v2").Header.Revision }, wantRev: 3, key: "k", create: 2, mod: 3, version: 2},
		{name: "other key", do: func() int64 { return ts.put("j", "x").Header.Revision }, wantRev: 4, key: "k", create: 2, mod: 3, version: 2},
		{name: "delete", do: func() int64 { return ts.del("k", "").Header.Revision }, wantRev: 5, key: "k"},
		{name: "delete missing keeps revision", do: func() int64 { return ts.del("k", "").Header.Revision }, wantRev: 5, key: "k"},
		{name: "recreate resets version", do: func() int64 { return ts.put("k", "v3").Header.Revision }, wantRev: 6, key: "k", create: 6, mod: 6, version: 1},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if got := st.do(); got != st.wantRev {
				t.Errorf("header revision = %d, want %d", got, st.wantRev)
			}
			if got := ts.s.Rev(); got != st.wantRev {
				t.Errorf("store revision = %d, want %d", got, st.wantRev)
			}
			kv := ts.get(st.key, 0)
			if st.version == 0 {
				if kv != nil {
					t.Errorf("key %q exists: %v", st.key, kv)
				}
				return
			}
			if kv == nil {
				t.Fatalf("key %q missing", st.key)
			}
			if kv.CreateRevision != st.create || kv.ModRevision != st.mod || kv.Version != st.version {
				t.Errorf("create/mod/version = %d/%d/%d, want %d/%d/%d", kv.CreateRevision, kv.ModRevision, kv.Version, st.create, st.mod, st.version)
			}
		})
	}
}

func TestPutPrevKVAndIgnore(t *testing.T) {
	ts := newTestStore(t)
	if resp := ts.putReq(&pb.PutRequest{Key: []byte("k"), Value: []byte("a"), PrevKv: true}); resp.PrevKv != nil {
		t.Errorf("prev_kv of a new key = %v, want nil", resp.PrevKv)
	}
	resp := ts.putReq(&pb.PutRequest{Key: []byte("k"), Value: []byte("b"), PrevKv: true})
	if resp.PrevKv == nil || string(resp.PrevKv.Value) != "a" || resp.PrevKv.ModRevision != 2 {
		t.Errorf("prev_kv = %v, want value a at revision 2", resp.PrevKv)
	}
	ts.putReq(&pb.PutRequest{Key: []byte("k"), IgnoreValue: true})
	if kv := ts.get("k", 0); string(kv.Value) != "b" || kv.Version != 3 {
		t.Errorf("after ignore_value: %v, want value b version 3", kv)
	}

	tests := []struct {
		name string
		req  *pb.PutRequest
		want error
	}{
		{name: "ignore_value on missing key", req: &pb.PutRequest{Key: []byte("missing"), IgnoreValue: true}, want: rpctypes.ErrGRPCKeyNotFound},
		{name: "ignore_lease on missing key", req: &pb.PutRequest{Key: []byte("missing"), IgnoreLease: true}, want: rpctypes.ErrGRPCKeyNotFound},
		{name: "unknown lease", req: &pb.PutRequest{Key: []byte("k"), Lease: 42}, want: rpctypes.ErrGRPCLeaseNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rev := ts.s.Rev()
			err := ts.db.Update(func(tx *bolt.Tx) error {
				_, err := ts.s.Put(tx, tt.req)
				return err
			})
			if !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
			if ts.s.Rev() != rev {
				t.Errorf("revision moved from %d to %d on a failed put", rev, ts.s.Rev())
			}
		})
	}
}

func TestDeleteRangePrevKVs(t *testing.T) {
	ts := newTestStore(t)
	for _, k := range []string{"a", "b/1", "b/2", "c"} {
		ts.put(k, "v-"+k)
	}
	resp := ts.del("b/", "b0")
	if resp.Deleted != 2 || resp.Header.Revision != 6 {
		t.Errorf("deleted %d at %d, want 2 at 6", resp.Deleted, resp.Header.Revision)
	}
	if got := keysOf(resp.PrevKvs); !slices.Equal(got, []string{"b/1", "b/2"}) {
		t.Errorf("prev kvs = %q", got)
	}
	if resp.PrevKvs[0].Value == nil {
		t.Error("prev kv lost its value")
	}
	// Both deletes share one main revision with sub revisions 0 and 1.
	var subs []int64
	ts.s.mu.RLock()
	for _, e := range ts.s.ix.log {
		if e.rev.main == 6 {
			subs = append(subs, e.rev.sub)
		}
	}
	ts.s.mu.RUnlock()
	if !slices.Equal(subs, []int64{0, 1}) {
		t.Errorf("sub revisions at 6 = %v, want [0 1]", subs)
	}
	all := ts.rangeReq(&pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}})
	if got := keysOf(all.Kvs); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("keys left = %q", got)
	}
}

// newLeasedStore returns a store wired to a real lessor that has lease 7.
func newLeasedStore(t *testing.T) (*testStore, *lease.Lessor) {
	ts := newTestStore(t)
	l := lease.NewLessor(1, nil)
	ts.update(func(tx *bolt.Tx) error {
		if err := l.Open(tx); err != nil {
			return err
		}
		_, err := l.Grant(tx, 7, 60)
		return err
	})
	ts.s.SetLessor(l)
	return ts, l
}

func leaseKeys(t *testing.T, l *lease.Lessor, id int64) []string {
	t.Helper()
	_, _, keys, err := l.TimeToLive(id)
	if err != nil && !errors.Is(err, lease.ErrNotPrimary) {
		t.Fatalf("time to live of %d: %v", id, err)
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = string(k)
	}
	return out
}

func TestPutLeaseAttachDetach(t *testing.T) {
	ts, l := newLeasedStore(t)
	ts.update(func(tx *bolt.Tx) error {
		_, err := l.Grant(tx, 8, 60)
		return err
	})
	ts.putReq(&pb.PutRequest{Key: []byte("a"), Value: []byte("1"), Lease: 7})
	ts.putReq(&pb.PutRequest{Key: []byte("b"), Value: []byte("1"), Lease: 7})
	ts.putReq(&pb.PutRequest{Key: []byte("c"), Value: []byte("1"), Lease: 7})
	if got := leaseKeys(t, l, 7); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("lease 7 keys = %q", got)
	}
	ts.putReq(&pb.PutRequest{Key: []byte("a"), Value: []byte("2"), Lease: 8}) // moves to 8
	ts.putReq(&pb.PutRequest{Key: []byte("b"), Value: []byte("2")})           // no lease
	ts.putReq(&pb.PutRequest{Key: []byte("c"), Value: []byte("3"), IgnoreLease: true})
	if got := leaseKeys(t, l, 7); !slices.Equal(got, []string{"c"}) {
		t.Errorf("lease 7 keys = %q, want [c]", got)
	}
	if got := leaseKeys(t, l, 8); !slices.Equal(got, []string{"a"}) {
		t.Errorf("lease 8 keys = %q, want [a]", got)
	}
	if kv := ts.get("c", 0); kv.Lease != 7 {
		t.Errorf("ignore_lease changed lease to %d", kv.Lease)
	}
	ts.del("c", "")
	if got := leaseKeys(t, l, 7); len(got) != 0 {
		t.Errorf("lease 7 keys after delete = %q", got)
	}
}
