package etcd_test

import (
	"context"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

// The kinds of request FuzzKVRequest decodes its bytes as.
const (
	fuzzRange = iota
	fuzzPut
	fuzzDelete
	fuzzTxn
	fuzzCompact
	fuzzLeaseGrant
	fuzzLeaseRevoke
	fuzzKinds
)

// fuzzClientCodes are the codes etcd answers a request it refuses with:
// the caller's fault (bad argument, missing lease, compacted or future
// revision, too large) or a precondition. Anything else (Unknown, Internal,
// Unavailable, DeadlineExceeded) from a healthy one-member cluster is a
// server bug.
var fuzzClientCodes = map[codes.Code]bool{
	codes.OK:                 true,
	codes.InvalidArgument:    true,
	codes.OutOfRange:         true,
	codes.NotFound:           true,
	codes.FailedPrecondition: true,
	codes.ResourceExhausted:  true,
}

// FuzzKVRequest decodes arbitrary bytes as a KV or lease request and sends
// it straight to a member's gRPC service (no client-side checks between).
// The member must answer with a result or a client error, never panic,
// never fail its apply loop: after every request it still leads and still
// applies.
func FuzzKVRequest(f *testing.F) {
	c := etcdtest.New(f, 1, fastTicks(10*time.Millisecond))
	cli := c.Client()
	kv := pb.NewKVClient(cli.ActiveConnection())
	lease := pb.NewLeaseClient(cli.ActiveConnection())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, k := range []string{"/a", "/b", "/c"} {
		if _, err := cli.Put(ctx, k, string(rune('1'+i))); err != nil {
			f.Fatal(err)
		}
	}

	put := func(k, v string) *pb.RequestOp {
		return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(k), Value: []byte(v)}}}
	}
	rng := func(k, end string) *pb.RequestOp {
		return &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte(k), RangeEnd: []byte(end)}}}
	}
	del := func(k, end string) *pb.RequestOp {
		return &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte(k), RangeEnd: []byte(end), PrevKv: true}}}
	}
	seeds := []struct {
		kind uint8
		msg  proto.Message
	}{
		{fuzzRange, &pb.RangeRequest{Key: []byte("/a")}},
		{fuzzRange, &pb.RangeRequest{Key: []byte("/"), RangeEnd: []byte("0"), Limit: 2, SortOrder: pb.RangeRequest_DESCEND, SortTarget: pb.RangeRequest_MOD}},
		{fuzzRange, &pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}, CountOnly: true}},
		{fuzzRange, &pb.RangeRequest{Key: []byte("/a"), Revision: -1}},
		{fuzzRange, &pb.RangeRequest{Key: []byte("/a"), Revision: 1 << 62}},
		{fuzzRange, &pb.RangeRequest{Key: []byte("/"), RangeEnd: []byte("0"), Limit: -5, MinModRevision: 9, MaxModRevision: 2, MinCreateRevision: -1}},
		{fuzzRange, &pb.RangeRequest{Key: []byte("/z"), RangeEnd: []byte("/a")}},
		{fuzzRange, &pb.RangeRequest{Key: []byte("/a"), SortOrder: 99, SortTarget: 99}},
		{fuzzPut, &pb.PutRequest{Key: []byte("/a"), Value: []byte("x"), PrevKv: true}},
		{fuzzPut, &pb.PutRequest{Key: []byte("/a"), IgnoreValue: true, IgnoreLease: true}},
		{fuzzPut, &pb.PutRequest{Key: []byte("/new"), IgnoreValue: true}},
		{fuzzPut, &pb.PutRequest{Key: []byte("/a"), Lease: 1}},
		{fuzzPut, &pb.PutRequest{Value: []byte("no key")}},
		{fuzzDelete, &pb.DeleteRangeRequest{Key: []byte("/b"), PrevKv: true}},
		{fuzzDelete, &pb.DeleteRangeRequest{Key: []byte("/"), RangeEnd: []byte{0}}},
		{fuzzDelete, &pb.DeleteRangeRequest{Key: []byte("/z"), RangeEnd: []byte("/a")}},
		{fuzzTxn, &pb.TxnRequest{
			Compare: []*pb.Compare{{Key: []byte("/a"), Target: pb.Compare_VERSION, Result: pb.Compare_GREATER, TargetUnion: &pb.Compare_Version{Version: 0}}},
			Success: []*pb.RequestOp{put("/a", "t"), rng("/b", "")},
			Failure: []*pb.RequestOp{del("/c", "")},
		}},
		{fuzzTxn, &pb.TxnRequest{
			Compare: []*pb.Compare{{Key: []byte("/"), RangeEnd: []byte("0"), Target: pb.Compare_MOD, Result: pb.Compare_LESS, TargetUnion: &pb.Compare_ModRevision{ModRevision: 1 << 40}}},
			Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestTxn{RequestTxn: &pb.TxnRequest{Success: []*pb.RequestOp{put("/n", "nested")}}}}},
		}},
		{fuzzTxn, &pb.TxnRequest{Compare: []*pb.Compare{{Key: []byte("/a"), Target: pb.Compare_VALUE, Result: 17}}}},
		{fuzzTxn, &pb.TxnRequest{Compare: []*pb.Compare{{Key: []byte("/a"), Target: 42, Result: pb.Compare_EQUAL}}}},
		{fuzzTxn, &pb.TxnRequest{Compare: []*pb.Compare{{Key: []byte("/a"), Target: pb.Compare_LEASE, Result: pb.Compare_NOT_EQUAL, TargetUnion: &pb.Compare_Lease{Lease: 7}}}}},
		{fuzzTxn, &pb.TxnRequest{Success: []*pb.RequestOp{put("/d", "1"), put("/d", "2")}}},
		{fuzzTxn, &pb.TxnRequest{Success: []*pb.RequestOp{{}}}},
		{fuzzTxn, &pb.TxnRequest{Success: []*pb.RequestOp{del("/", "0"), put("/x", "1")}}},
		{fuzzCompact, &pb.CompactionRequest{Revision: 2}},
		{fuzzCompact, &pb.CompactionRequest{Revision: -1, Physical: true}},
		{fuzzCompact, &pb.CompactionRequest{Revision: 1 << 40}},
		{fuzzLeaseGrant, &pb.LeaseGrantRequest{TTL: 60}},
		{fuzzLeaseGrant, &pb.LeaseGrantRequest{TTL: -1, ID: -5}},
		{fuzzLeaseGrant, &pb.LeaseGrantRequest{TTL: 1 << 62, ID: 1}},
		{fuzzLeaseRevoke, &pb.LeaseRevokeRequest{ID: 1}},
		{fuzzLeaseRevoke, &pb.LeaseRevokeRequest{ID: -1}},
	}
	for _, s := range seeds {
		b, err := proto.Marshal(s.msg)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(s.kind, b)
	}
	f.Add(uint8(fuzzTxn), []byte{0x12, 0x02, 0x08, 0x80})
	f.Add(uint8(fuzzRange), []byte{})

	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		var msg proto.Message
		switch kind % fuzzKinds {
		case fuzzRange:
			msg = &pb.RangeRequest{}
		case fuzzPut:
			msg = &pb.PutRequest{}
		case fuzzDelete:
			msg = &pb.DeleteRangeRequest{}
		case fuzzTxn:
			msg = &pb.TxnRequest{}
		case fuzzCompact:
			msg = &pb.CompactionRequest{}
		case fuzzLeaseGrant:
			msg = &pb.LeaseGrantRequest{}
		default:
			msg = &pb.LeaseRevokeRequest{}
		}
		if err := proto.Unmarshal(body, msg); err != nil {
			t.Skip("not a request: the gRPC server refuses it before any handler")
		}
		reqCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		switch r := msg.(type) {
		case *pb.RangeRequest:
			_, err = kv.Range(reqCtx, r)
		case *pb.PutRequest:
			_, err = kv.Put(reqCtx, r)
		case *pb.DeleteRangeRequest:
			_, err = kv.DeleteRange(reqCtx, r)
		case *pb.TxnRequest:
			_, err = kv.Txn(reqCtx, r)
		case *pb.CompactionRequest:
			_, err = kv.Compact(reqCtx, r)
		case *pb.LeaseGrantRequest:
			_, err = lease.LeaseGrant(reqCtx, r)
		case *pb.LeaseRevokeRequest:
			_, err = lease.LeaseRevoke(reqCtx, r)
		}
		if st := grpcstatus.Convert(err); !fuzzClientCodes[st.Code()] {
			t.Fatalf("%T %v: %s %q; want OK or a client error", msg, msg, st.Code(), st.Message())
		}
		if s := status(c, 0); s.State != "StateLeader" || len(s.Alarms) > 0 {
			t.Fatalf("after %T %v the member is %s with alarms %v", msg, msg, s.State, s.Alarms)
		}
	})
}
