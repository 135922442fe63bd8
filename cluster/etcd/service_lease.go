package etcd

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// leaseServer is the etcd v3 Lease service.
type leaseServer struct {
	pb.UnimplementedLeaseServer
	m *Member
}

// LeaseGrant picks an ID (if the client did not) before proposing, so that
// every member applies the same one.
func (s *leaseServer) LeaseGrant(ctx context.Context, r *pb.LeaseGrantRequest) (*pb.LeaseGrantResponse, error) {
	if r.GetTTL() > maxLeaseTTL {
		return nil, rpctypes.ErrGRPCLeaseTTLTooLarge
	}
	if r.GetID() < 0 {
		return nil, rpctypes.ErrGRPCLeaseNotFound
	}
	req := &pb.LeaseGrantRequest{ID: r.GetID(), TTL: r.GetTTL()}
	if req.ID == 0 {
		req.ID = newLeaseID()
	}
	resp, err := s.m.propose(ctx, &pb.InternalRaftRequest{LeaseGrant: req})
	if err != nil {
		return nil, err
	}
	return resp.(*pb.LeaseGrantResponse), nil
}

// maxLeaseTTL is etcd's MaxLeaseTTL (9,000,000,000 seconds).
const maxLeaseTTL = 9000000000

func newLeaseID() int64 {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			continue
		}
		if id := int64(binary.BigEndian.Uint64(b[:]) >> 1); id > 0 {
			return id
		}
	}
}

func (s *leaseServer) LeaseRevoke(ctx context.Context, r *pb.LeaseRevokeRequest) (*pb.LeaseRevokeResponse, error) {
	resp, err := s.m.propose(ctx, &pb.InternalRaftRequest{LeaseRevoke: r})
	if err != nil {
		return nil, err
	}
	return resp.(*pb.LeaseRevokeResponse), nil
}

// LeaseKeepAlive renews leases on the leader for as long as the client keeps
// the stream open.
func (s *leaseServer) LeaseKeepAlive(stream pb.Lease_LeaseKeepAliveServer) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		ttl, err := s.m.renewLease(stream.Context(), req.GetID())
		if err != nil {
			return err
		}
		resp := &pb.LeaseKeepAliveResponse{ID: req.GetID(), TTL: ttl, Header: &pb.ResponseHeader{}}
		s.m.fillHeader(resp.Header)
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}

func (s *leaseServer) LeaseTimeToLive(ctx context.Context, r *pb.LeaseTimeToLiveRequest) (*pb.LeaseTimeToLiveResponse, error) {
	reply, err := s.m.leaseTimeToLive(ctx, r.GetID(), r.GetKeys())
	if err != nil {
		return nil, err
	}
	resp := &pb.LeaseTimeToLiveResponse{Header: &pb.ResponseHeader{}, ID: r.GetID(), TTL: reply.TTL, GrantedTTL: reply.GrantedTTL, Keys: reply.Keys}
	s.m.fillHeader(resp.Header)
	return resp, nil
}

func (s *leaseServer) LeaseLeases(ctx context.Context, r *pb.LeaseLeasesRequest) (*pb.LeaseLeasesResponse, error) {
	if err := s.m.linearizableReadNotify(ctx); err != nil {
		return nil, err
	}
	resp := &pb.LeaseLeasesResponse{Header: &pb.ResponseHeader{}}
	for _, l := range s.m.lessor.Leases() {
		resp.Leases = append(resp.Leases, &pb.LeaseStatus{ID: l.ID})
	}
	s.m.fillHeader(resp.Header)
	return resp, nil
}
