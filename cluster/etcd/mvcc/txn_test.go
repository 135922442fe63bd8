package mvcc

import (
	"errors"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

func cmp(key string, target pb.Compare_CompareTarget, result pb.Compare_CompareResult, v any) *pb.Compare {
	c := &pb.Compare{Key: []byte(key), Target: target, Result: result}
	switch target {
	case pb.Compare_VALUE:
		c.TargetUnion = &pb.Compare_Value{Value: []byte(v.(string))}
	case pb.Compare_VERSION:
		c.TargetUnion = &pb.Compare_Version{Version: int64(v.(int))}
	case pb.Compare_CREATE:
		c.TargetUnion = &pb.Compare_CreateRevision{CreateRevision: int64(v.(int))}
	case pb.Compare_MOD:
		c.TargetUnion = &pb.Compare_ModRevision{ModRevision: int64(v.(int))}
	case pb.Compare_LEASE:
		c.TargetUnion = &pb.Compare_Lease{Lease: int64(v.(int))}
	}
	return c
}

func TestTxnCompares(t *testing.T) {
	ts := newTestStore(t)
	ts.put("a", "m")   // 2
	ts.put("a", "m")   // 3: a version 2, create 2, mod 3
	ts.put("b/1", "x") // 4
	ts.put("b/2", "y") // 5
	tests := []struct {
		name string
		cmp  *pb.Compare
		want bool
	}{
		{"value equal", cmp("a", pb.Compare_VALUE, pb.Compare_EQUAL, "m"), true},
		{"value not equal", cmp("a", pb.Compare_VALUE, pb.Compare_NOT_EQUAL, "m"), false},
		{"value greater", cmp("a", pb.Compare_VALUE, pb.Compare_GREATER, "l"), true},
		{"value less", cmp("a", pb.Compare_VALUE, pb.Compare_LESS, "l"), false},
		{"value of missing key always fails", cmp("nope", pb.Compare_VALUE, pb.Compare_NOT_EQUAL, "m"), false},
		{"version equal", cmp("a", pb.Compare_VERSION, pb.Compare_EQUAL, 2), true},
		{"version greater", cmp("a", pb.Compare_VERSION, pb.Compare_GREATER, 1), true},
		{"version of missing key is 0", cmp("nope", pb.Compare_VERSION, pb.Compare_EQUAL, 0), true},
		{"create equal", cmp("a", pb.Compare_CREATE, pb.Compare_EQUAL, 2), true},
		{"create less", cmp("a", pb.Compare_CREATE, pb.Compare_LESS, 2), false},
		{"create of missing key is 0", cmp("nope", pb.Compare_CREATE, pb.Compare_EQUAL, 0), true},
		{"mod equal", cmp("a", pb.Compare_MOD, pb.Compare_EQUAL, 3), true},
		{"mod less", cmp("a", pb.Compare_MOD, pb.Compare_LESS, 4), true},
		{"mod not equal", cmp("a", pb.Compare_MOD, pb.Compare_NOT_EQUAL, 3), false},
		{"lease equal 0", cmp("a", pb.Compare_LEASE, pb.Compare_EQUAL, 0), true},
		{"lease greater", cmp("a", pb.Compare_LEASE, pb.Compare_GREATER, 0), false},
		{"range all match", withEnd(cmp("b/", pb.Compare_MOD, pb.Compare_GREATER, 3), "b0"), true},
		{"range one fails", withEnd(cmp("b/", pb.Compare_MOD, pb.Compare_GREATER, 4), "b0"), false},
		{"range from key", withEnd(cmp("b", pb.Compare_CREATE, pb.Compare_GREATER, 3), "\x00"), true},
		{"empty range compares to zero", withEnd(cmp("c/", pb.Compare_VERSION, pb.Compare_EQUAL, 0), "c0"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rev := ts.s.Rev()
			resp := ts.txn(&pb.TxnRequest{
				Compare: []*pb.Compare{tt.cmp},
				Success: []*pb.RequestOp{rangeOp("a", "")},
				Failure: []*pb.RequestOp{rangeOp("b/1", "")},
			})
			if resp.Succeeded != tt.want {
				t.Errorf("succeeded = %v, want %v", resp.Succeeded, tt.want)
			}
			wantKey := "b/1"
			if tt.want {
				wantKey = "a"
			}
			if got := keysOf(resp.Responses[0].GetResponseRange().Kvs); !slices.Equal(got, []string{wantKey}) {
				t.Errorf("branch read %q, want [%s]", got, wantKey)
			}
			if resp.Header.Revision != rev || ts.s.Rev() != rev {
				t.Errorf("read-only txn moved revision %d -> %d", rev, ts.s.Rev())
			}
		})
	}
}

func withEnd(c *pb.Compare, end string) *pb.Compare {
	c.RangeEnd = []byte(end)
	return c
}

func TestTxnWritesShareOneRevision(t *testing.T) {
	ts := newTestStore(t)
	ts.put("old", "1") // 2
	resp := ts.txn(&pb.TxnRequest{
		Success: []*pb.RequestOp{
			putOp("x", "1"),
			rangeOp("x", ""), // reads its own write
			putOp("y", "2"),
			delOp("old", ""),
			rangeOp("old", ""),
		},
	})
	if !resp.Succeeded || resp.Header.Revision != 3 || ts.s.Rev() != 3 {
		t.Fatalf("succeeded %v at %d (store %d), want true at 3", resp.Succeeded, resp.Header.Revision, ts.s.Rev())
	}
	rr := resp.Responses[1].GetResponseRange()
	if len(rr.Kvs) != 1 || string(rr.Kvs[0].Value) != "1" || rr.Kvs[0].ModRevision != 3 {
		t.Errorf("read of own put = %v", rr.Kvs)
	}
	if got := resp.Responses[4].GetResponseRange().Kvs; len(got) != 0 {
		t.Errorf("read of own delete = %v, want nothing", got)
	}
	if got := resp.Responses[3].GetResponseDeleteRange().Deleted; got != 1 {
		t.Errorf("deleted = %d", got)
	}
	for _, k := range []string{"x", "y"} {
		if kv := ts.get(k, 0); kv == nil || kv.ModRevision != 3 {
			t.Errorf("%s = %v, want mod revision 3", k, kv)
		}
	}
	if kv := ts.get("old", 2); kv == nil {
		t.Error("old is gone at revision 2")
	}
}

func TestTxnNested(t *testing.T) {
	ts := newTestStore(t)
	ts.put("flag", "on") // 2
	resp := ts.txn(&pb.TxnRequest{
		Compare: []*pb.Compare{cmp("flag", pb.Compare_VALUE, pb.Compare_EQUAL, "on")},
		Success: []*pb.RequestOp{
			putOp("flag", "off"),
			txnOp(&pb.TxnRequest{
				// Nested compares see the state before the txn: flag is
				// still "on" for them although the outer txn changed it.
				Compare: []*pb.Compare{cmp("flag", pb.Compare_VALUE, pb.Compare_EQUAL, "on")},
				Success: []*pb.RequestOp{putOp("inner", "then"), rangeOp("flag", "")},
				Failure: []*pb.RequestOp{putOp("inner", "else")},
			}),
			txnOp(&pb.TxnRequest{
				Compare: []*pb.Compare{cmp("missing", pb.Compare_VERSION, pb.Compare_GREATER, 0)},
				Success: []*pb.RequestOp{putOp("second", "then")},
				Failure: []*pb.RequestOp{putOp("second", "else")},
			}),
		},
	})
	if !resp.Succeeded || resp.Header.Revision != 3 {
		t.Fatalf("succeeded %v at %d, want true at 3", resp.Succeeded, resp.Header.Revision)
	}
	inner := resp.Responses[1].GetResponseTxn()
	if !inner.Succeeded {
		t.Error("inner txn took the failure branch")
	}
	if kvs := inner.Responses[1].GetResponseRange().Kvs; len(kvs) != 1 || string(kvs[0].Value) != "off" {
		t.Errorf("inner read of flag = %v, want the outer txn's write", kvs)
	}
	if second := resp.Responses[2].GetResponseTxn(); second.Succeeded {
		t.Error("second nested txn took the success branch")
	}
	for k, want := range map[string]string{"flag": "off", "inner": "then", "second": "else"} {
		if kv := ts.get(k, 0); kv == nil || string(kv.Value) != want || kv.ModRevision != 3 {
			t.Errorf("%s = %v, want %q at 3", k, kv, want)
		}
	}
}

func TestTxnChecksBeforeWriting(t *testing.T) {
	ts := newTestStore(t)
	ts.put("a", "1") // 2
	tests := []struct {
		name string
		ops  []*pb.RequestOp
		want error
	}{
		{name: "future range revision", ops: []*pb.RequestOp{putOp("b", "1"), {Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte("a"), Revision: 3}}}}, want: rpctypes.ErrGRPCFutureRev},
		{name: "unknown lease", ops: []*pb.RequestOp{putOp("b", "1"), {Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("c"), Lease: 5}}}}, want: rpctypes.ErrGRPCLeaseNotFound},
		{name: "ignore value on missing key in nested txn", ops: []*pb.RequestOp{putOp("b", "1"), txnOp(&pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("zz"), IgnoreValue: true}}}}})}, want: rpctypes.ErrGRPCKeyNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ts.db.Update(func(tx *bolt.Tx) error {
				_, err := ts.s.Txn(tx, &pb.TxnRequest{Success: tt.ops})
				return err
			})
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if ts.s.Rev() != 2 || ts.get("b", 0) != nil {
				t.Errorf("a failed txn changed the store: revision %d", ts.s.Rev())
			}
		})
	}
}

func TestTxnReadOnlyWithoutTx(t *testing.T) {
	ts := newTestStore(t)
	ts.put("a", "1")
	resp, err := ts.s.Txn(nil, &pb.TxnRequest{Success: []*pb.RequestOp{rangeOp("a", "")}})
	if err != nil || len(resp.Responses[0].GetResponseRange().Kvs) != 1 {
		t.Fatalf("read-only txn without tx: %v %v", resp, err)
	}
	if _, err := ts.s.Txn(nil, &pb.TxnRequest{Success: []*pb.RequestOp{putOp("b", "1")}}); err == nil {
		t.Fatal("a write txn without a bbolt transaction succeeded")
	}
	if ts.s.Rev() != 2 {
		t.Errorf("revision = %d, want 2", ts.s.Rev())
	}
}

func TestValidateTxn(t *testing.T) {
	put := func(k string) *pb.RequestOp { return putOp(k, "v") }
	tests := []struct {
		name string
		req  *pb.TxnRequest
		want error
	}{
		{name: "valid", req: &pb.TxnRequest{Success: []*pb.RequestOp{put("a"), put("b"), delOp("c", "")}}},
		{name: "too many ops", req: &pb.TxnRequest{Success: []*pb.RequestOp{put("a"), put("b"), put("c"), put("d")}}, want: rpctypes.ErrGRPCTooManyOps},
		{name: "too many compares", req: &pb.TxnRequest{Compare: make([]*pb.Compare, 4)}, want: rpctypes.ErrGRPCTooManyOps},
		{name: "empty compare key", req: &pb.TxnRequest{Compare: []*pb.Compare{{}}}, want: rpctypes.ErrGRPCEmptyKey},
		{name: "empty op", req: &pb.TxnRequest{Success: []*pb.RequestOp{{}}}, want: rpctypes.ErrGRPCKeyNotFound},
		{name: "empty put key", req: &pb.TxnRequest{Success: []*pb.RequestOp{put("")}}, want: rpctypes.ErrGRPCEmptyKey},
		{name: "duplicate put", req: &pb.TxnRequest{Success: []*pb.RequestOp{put("a"), put("a")}}, want: rpctypes.ErrGRPCDuplicateKey},
		{name: "put and delete same key", req: &pb.TxnRequest{Success: []*pb.RequestOp{put("a"), delOp("a", "")}}, want: rpctypes.ErrGRPCDuplicateKey},
		{name: "put inside deleted range", req: &pb.TxnRequest{Failure: []*pb.RequestOp{put("b/1"), delOp("b/", "b0")}}, want: rpctypes.ErrGRPCDuplicateKey},
		{name: "nested put overlaps outer put", req: &pb.TxnRequest{Success: []*pb.RequestOp{put("a"), txnOp(&pb.TxnRequest{Success: []*pb.RequestOp{put("a")}})}}, want: rpctypes.ErrGRPCDuplicateKey},
		{name: "same key in exclusive nested branches", req: &pb.TxnRequest{Success: []*pb.RequestOp{txnOp(&pb.TxnRequest{Success: []*pb.RequestOp{put("a")}, Failure: []*pb.RequestOp{put("a")}})}}},
		{name: "nested delete overlaps outer put", req: &pb.TxnRequest{Success: []*pb.RequestOp{put("a"), txnOp(&pb.TxnRequest{Success: []*pb.RequestOp{delOp("a", "")}})}}, want: rpctypes.ErrGRPCDuplicateKey},
		{name: "success and failure are separate", req: &pb.TxnRequest{Success: []*pb.RequestOp{put("a")}, Failure: []*pb.RequestOp{put("a")}}},
		{name: "nested txn too many ops", req: &pb.TxnRequest{Success: []*pb.RequestOp{put("a"), txnOp(&pb.TxnRequest{Success: []*pb.RequestOp{put("b"), put("c"), put("d")}})}}, want: rpctypes.ErrGRPCTooManyOps},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := ValidateTxn(tt.req, 3); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}
