package mvcc

import (
	"errors"
	"slices"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// rangeFixture writes a small history; the comment gives each revision.
func rangeFixture(t *testing.T) *testStore {
	ts := newTestStore(t)
	ts.put("foo/a", "3") // 2
	ts.put("foo/b", "1") // 3
	ts.put("foo/c", "2") // 4
	ts.put("foo/a", "0") // 5
	ts.put("fop", "x")   // 6
	ts.del("foo/b", "")  // 7
	ts.put("zoo", "z")   // 8
	return ts
}

func TestRangeOptions(t *testing.T) {
	ts := rangeFixture(t)
	all := []byte{0}
	tests := []struct {
		name      string
		req       *pb.RangeRequest
		wantKeys  []string
		wantCount int64
		wantMore  bool
	}{
		{name: "single key", req: &pb.RangeRequest{Key: []byte("foo/a")}, wantKeys: []string{"foo/a"}, wantCount: 1},
		{name: "deleted key", req: &pb.RangeRequest{Key: []byte("foo/b")}, wantKeys: []string{}, wantCount: 0},
		{name: "prefix", req: &pb.RangeRequest{Key: []byte("foo/"), RangeEnd: []byte("foo0")}, wantKeys: []string{"foo/a", "foo/c"}, wantCount: 2},
		{name: "from key", req: &pb.RangeRequest{Key: []byte("foo/b"), RangeEnd: all}, wantKeys: []string{"foo/c", "fop", "zoo"}, wantCount: 3},
		{name: "all keys", req: &pb.RangeRequest{Key: all, RangeEnd: all}, wantKeys: []string{"foo/a", "foo/c", "fop", "zoo"}, wantCount: 4},
		{name: "end before key", req: &pb.RangeRequest{Key: []byte("z"), RangeEnd: []byte("a")}, wantKeys: []string{}, wantCount: 0},
		{name: "limit with more", req: &pb.RangeRequest{Key: all, RangeEnd: all, Limit: 2}, wantKeys: []string{"foo/a", "foo/c"}, wantCount: 4, wantMore: true},
		{name: "limit exact", req: &pb.RangeRequest{Key: all, RangeEnd: all, Limit: 4}, wantKeys: []string{"foo/a", "foo/c", "fop", "zoo"}, wantCount: 4},
		{name: "count only", req: &pb.RangeRequest{Key: all, RangeEnd: all, CountOnly: true}, wantKeys: []string{}, wantCount: 4},
		{name: "at revision 4", req: &pb.RangeRequest{Key: []byte("foo/"), RangeEnd: []byte("foo0"), Revision: 4}, wantKeys: []string{"foo/a", "foo/b", "foo/c"}, wantCount: 3},
		{name: "at revision 6", req: &pb.RangeRequest{Key: all, RangeEnd: all, Revision: 6}, wantKeys: []string{"foo/a", "foo/b", "foo/c", "fop"}, wantCount: 4},
		{name: "at revision 1", req: &pb.RangeRequest{Key: all, RangeEnd: all, Revision: 1}, wantKeys: []string{}, wantCount: 0},
		{name: "sort value descend", req: &pb.RangeRequest{Key: all, RangeEnd: all, SortTarget: pb.RangeRequest_VALUE, SortOrder: pb.RangeRequest_DESCEND}, wantKeys: []string{"zoo", "fop", "foo/c", "foo/a"}, wantCount: 4},
		{name: "sort create, order none means ascend", req: &pb.RangeRequest{Key: all, RangeEnd: all, SortTarget: pb.RangeRequest_CREATE}, wantKeys: []string{"foo/a", "foo/c", "fop", "zoo"}, wantCount: 4},
		{name: "sort mod descend", req: &pb.RangeRequest{Key: all, RangeEnd: all, SortTarget: pb.RangeRequest_MOD, SortOrder: pb.RangeRequest_DESCEND}, wantKeys: []string{"zoo", "fop", "foo/a", "foo/c"}, wantCount: 4},
		{name: "sort mod ascend", req: &pb.RangeRequest{Key: all, RangeEnd: all, SortTarget: pb.RangeRequest_MOD, SortOrder: pb.RangeRequest_ASCEND}, wantKeys: []string{"foo/c", "foo/a", "fop", "zoo"}, wantCount: 4},
		{name: "sort key descend", req: &pb.RangeRequest{Key: all, RangeEnd: all, SortOrder: pb.RangeRequest_DESCEND}, wantKeys: []string{"zoo", "fop", "foo/c", "foo/a"}, wantCount: 4},
		{name: "sort version descend, ties in key order", req: &pb.RangeRequest{Key: all, RangeEnd: all, SortTarget: pb.RangeRequest_VERSION, SortOrder: pb.RangeRequest_DESCEND}, wantKeys: []string{"foo/a", "foo/c", "fop", "zoo"}, wantCount: 4},
		{name: "sort with limit", req: &pb.RangeRequest{Key: all, RangeEnd: all, SortTarget: pb.RangeRequest_MOD, SortOrder: pb.RangeRequest_DESCEND, Limit: 2}, wantKeys: []string{"zoo", "fop"}, wantCount: 4, wantMore: true},
		{name: "min mod revision", req: &pb.RangeRequest{Key: all, RangeEnd: all, MinModRevision: 5}, wantKeys: []string{"foo/a", "fop", "zoo"}, wantCount: 4},
		{name: "max mod revision", req: &pb.RangeRequest{Key: all, RangeEnd: all, MaxModRevision: 5}, wantKeys: []string{"foo/a", "foo/c"}, wantCount: 4},
		{name: "create revision window", req: &pb.RangeRequest{Key: all, RangeEnd: all, MinCreateRevision: 4, MaxCreateRevision: 6}, wantKeys: []string{"foo/c", "fop"}, wantCount: 4},
		{name: "filter with limit", req: &pb.RangeRequest{Key: all, RangeEnd: all, MinModRevision: 5, Limit: 2}, wantKeys: []string{"foo/a", "fop"}, wantCount: 4, wantMore: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := ts.rangeReq(tt.req)
			if got := keysOf(resp.Kvs); !slices.Equal(got, tt.wantKeys) {
				t.Errorf("keys = %q, want %q", got, tt.wantKeys)
			}
			if resp.Count != tt.wantCount {
				t.Errorf("count = %d, want %d", resp.Count, tt.wantCount)
			}
			if resp.More != tt.wantMore {
				t.Errorf("more = %v, want %v", resp.More, tt.wantMore)
			}
			if resp.Header.Revision != 8 {
				t.Errorf("header revision = %d, want 8", resp.Header.Revision)
			}
		})
	}
}

func TestRangeKeyValueFields(t *testing.T) {
	ts := rangeFixture(t)
	tests := []struct {
		name                 string
		key                  string
		rev                  int64
		keysOnly             bool
		value                string
		create, mod, version int64
	}{
		{name: "updated key now", key: "foo/a", value: "0", create: 2, mod: 5, version: 2},
		{name: "updated key before update", key: "foo/a", rev: 4, value: "3", create: 2, mod: 2, version: 1},
		{name: "deleted key before delete", key: "foo/b", rev: 6, value: "1", create: 3, mod: 3, version: 1},
		{name: "keys only drops value", key: "foo/a", keysOnly: true, value: "", create: 2, mod: 5, version: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := ts.rangeReq(&pb.RangeRequest{Key: []byte(tt.key), Revision: tt.rev, KeysOnly: tt.keysOnly})
			if len(resp.Kvs) != 1 {
				t.Fatalf("got %d kvs, want 1", len(resp.Kvs))
			}
			kv := resp.Kvs[0]
			if string(kv.Value) != tt.value || kv.CreateRevision != tt.create || kv.ModRevision != tt.mod || kv.Version != tt.version {
				t.Errorf("got value %q create %d mod %d version %d, want %q %d %d %d",
					kv.Value, kv.CreateRevision, kv.ModRevision, kv.Version, tt.value, tt.create, tt.mod, tt.version)
			}
		})
	}
	// keys_only must not have changed the stored value.
	if kv := ts.get("foo/a", 0); string(kv.Value) != "0" {
		t.Errorf("value after keys_only read = %q, want %q", kv.Value, "0")
	}
}

func TestRangeRevisionErrors(t *testing.T) {
	ts := rangeFixture(t)
	ts.compact(4)
	tests := []struct {
		name string
		rev  int64
		want error
	}{
		{name: "future", rev: 9, want: rpctypes.ErrGRPCFutureRev},
		{name: "compacted", rev: 3, want: rpctypes.ErrGRPCCompacted},
		{name: "at compaction revision", rev: 4},
		{name: "current", rev: 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ts.s.Range(&pb.RangeRequest{Key: []byte("foo/a"), Revision: tt.rev})
			if !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}
