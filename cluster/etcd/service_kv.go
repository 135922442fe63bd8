package etcd

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/klab-dev/klab/cluster/etcd/mvcc"
)

// maxTxnOps is etcd's default limit on operations in one transaction.
const maxTxnOps = 128

// kvServer is the etcd v3 KV service.
type kvServer struct {
	pb.UnimplementedKVServer
	m *Member
}

// Range serves reads. A serializable read answers from this member's state;
// a linearizable one (the default) first confirms with the leader that this
// member has applied everything committed before the request (ReadIndex).
func (s *kvServer) Range(ctx context.Context, r *pb.RangeRequest) (*pb.RangeResponse, error) {
	if err := mvcc.ValidateRange(r); err != nil {
		return nil, err
	}
	if !r.GetSerializable() {
		if err := s.m.linearizableReadNotify(ctx); err != nil {
			return nil, err
		}
	}
	resp, err := s.m.store.Range(r)
	if err != nil {
		return nil, err
	}
	s.m.fillHeader(resp.Header)
	return resp, nil
}

func (s *kvServer) Put(ctx context.Context, r *pb.PutRequest) (*pb.PutResponse, error) {
	if err := mvcc.ValidatePut(r); err != nil {
		return nil, err
	}
	resp, err := s.m.propose(ctx, &pb.InternalRaftRequest{Put: r})
	if err != nil {
		return nil, err
	}
	return resp.(*pb.PutResponse), nil
}

func (s *kvServer) DeleteRange(ctx context.Context, r *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	if err := mvcc.ValidateDeleteRange(r); err != nil {
		return nil, err
	}
	resp, err := s.m.propose(ctx, &pb.InternalRaftRequest{DeleteRange: r})
	if err != nil {
		return nil, err
	}
	return resp.(*pb.DeleteRangeResponse), nil
}

func (s *kvServer) Txn(ctx context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	if err := mvcc.ValidateTxn(r, maxTxnOps); err != nil {
		return nil, err
	}
	resp, err := s.m.propose(ctx, &pb.InternalRaftRequest{Txn: r})
	if err != nil {
		return nil, err
	}
	return resp.(*pb.TxnResponse), nil
}

func (s *kvServer) Compact(ctx context.Context, r *pb.CompactionRequest) (*pb.CompactionResponse, error) {
	resp, err := s.m.propose(ctx, &pb.InternalRaftRequest{Compaction: r})
	if err != nil {
		return nil, err
	}
	return resp.(*pb.CompactionResponse), nil
}
