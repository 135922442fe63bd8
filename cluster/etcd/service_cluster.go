package etcd

import (
	"context"
	"encoding/json"
	"net/url"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/raft/v3/raftpb"
)

// clusterServer is the etcd v3 Cluster service: membership through raft
// configuration changes.
type clusterServer struct {
	pb.UnimplementedClusterServer
	m *Member
}

func (s *clusterServer) header() *pb.ResponseHeader {
	h := &pb.ResponseHeader{}
	s.m.fillHeader(h)
	return h
}

func toPBMembers(ms []*memberInfo) []*pb.Member {
	out := make([]*pb.Member, 0, len(ms))
	for _, mi := range ms {
		out = append(out, &pb.Member{ID: mi.ID, Name: mi.Name, PeerURLs: mi.PeerURLs, ClientURLs: mi.ClientURLs, IsLearner: mi.IsLearner})
	}
	return out
}

func (s *clusterServer) MemberList(ctx context.Context, r *pb.MemberListRequest) (*pb.MemberListResponse, error) {
	if r.GetLinearizable() {
		if err := s.m.linearizableReadNotify(ctx); err != nil {
			return nil, err
		}
	}
	return &pb.MemberListResponse{Header: s.header(), Members: toPBMembers(s.m.members.list())}, nil
}

// MemberAdd adds a member (or a learner) with the given peer URLs. The new
// member must then be started with Join set, as etcd's must be started with
// --initial-cluster-state=existing.
func (s *clusterServer) MemberAdd(ctx context.Context, r *pb.MemberAddRequest) (*pb.MemberAddResponse, error) {
	if len(r.GetPeerURLs()) == 0 {
		return nil, rpctypes.ErrGRPCMemberBadURLs
	}
	for _, u := range r.GetPeerURLs() {
		if pu, err := url.Parse(u); err != nil || pu.Scheme == "" || pu.Host == "" {
			return nil, rpctypes.ErrGRPCMemberBadURLs
		}
	}
	for _, mi := range s.m.members.list() {
		for _, a := range mi.PeerURLs {
			for _, b := range r.GetPeerURLs() {
				if a == b {
					return nil, rpctypes.ErrGRPCPeerURLExist
				}
			}
		}
	}
	mi := &memberInfo{ID: MemberID(r.GetPeerURLs()[0], s.m.cfg.ClusterToken), PeerURLs: r.GetPeerURLs(), IsLearner: r.GetIsLearner()}
	ctxData, err := json.Marshal(mi)
	if err != nil {
		return nil, err
	}
	typ := raftpb.ConfChangeAddNode
	if r.GetIsLearner() {
		typ = raftpb.ConfChangeAddLearnerNode
	}
	members, err := s.m.proposeConfChange(ctx, &raftpb.ConfChange{Type: typ.Enum(), NodeId: &mi.ID, Context: ctxData})
	if err != nil {
		return nil, err
	}
	return &pb.MemberAddResponse{
		Header:  s.header(),
		Member:  &pb.Member{ID: mi.ID, PeerURLs: mi.PeerURLs, IsLearner: mi.IsLearner},
		Members: toPBMembers(members),
	}, nil
}

func (s *clusterServer) MemberRemove(ctx context.Context, r *pb.MemberRemoveRequest) (*pb.MemberRemoveResponse, error) {
	id := r.GetID()
	if s.m.members.get(id) == nil {
		if s.m.members.isRemoved(id) {
			return nil, rpctypes.ErrGRPCMemberNotFound
		}
		return nil, rpctypes.ErrGRPCMemberNotFound
	}
	members, err := s.m.proposeConfChange(ctx, &raftpb.ConfChange{Type: raftpb.ConfChangeRemoveNode.Enum(), NodeId: &id})
	if err != nil {
		return nil, err
	}
	return &pb.MemberRemoveResponse{Header: s.header(), Members: toPBMembers(members)}, nil
}

func (s *clusterServer) MemberUpdate(ctx context.Context, r *pb.MemberUpdateRequest) (*pb.MemberUpdateResponse, error) {
	id := r.GetID()
	cur := s.m.members.get(id)
	if cur == nil {
		return nil, rpctypes.ErrGRPCMemberNotFound
	}
	cur.PeerURLs = r.GetPeerURLs()
	ctxData, err := json.Marshal(cur)
	if err != nil {
		return nil, err
	}
	members, err := s.m.proposeConfChange(ctx, &raftpb.ConfChange{Type: raftpb.ConfChangeUpdateNode.Enum(), NodeId: &id, Context: ctxData})
	if err != nil {
		return nil, err
	}
	return &pb.MemberUpdateResponse{Header: s.header(), Members: toPBMembers(members)}, nil
}

// MemberPromote makes a learner a voting member, once it has caught up with
// the leader (etcd's rule: within 90% of the leader's log).
func (s *clusterServer) MemberPromote(ctx context.Context, r *pb.MemberPromoteRequest) (*pb.MemberPromoteResponse, error) {
	id := r.GetID()
	cur := s.m.members.get(id)
	if cur == nil {
		return nil, rpctypes.ErrGRPCMemberNotFound
	}
	if !cur.IsLearner {
		return nil, rpctypes.ErrGRPCMemberNotLearner
	}
	if !s.m.isLeader() {
		return nil, rpctypes.ErrGRPCNotLeader
	}
	st := s.m.node.Status()
	if pr, ok := st.Progress[id]; !ok || float64(pr.Match) < 0.9*float64(st.HardState.GetCommit()) {
		return nil, rpctypes.ErrGRPCLearnerNotReady
	}
	ctxData, _ := json.Marshal(cur)
	members, err := s.m.proposeConfChange(ctx, &raftpb.ConfChange{Type: raftpb.ConfChangeAddNode.Enum(), NodeId: &id, Context: ctxData})
	if err != nil {
		return nil, err
	}
	return &pb.MemberPromoteResponse{Header: s.header(), Members: toPBMembers(members)}, nil
}
