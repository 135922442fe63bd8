package etcd

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/klab-dev/klab/cluster/etcd/raftlog"
)

// pendingResult is the outcome of one applied request, delivered to the
// proposer (if it is waiting on this member) after the transaction commits.
type pendingResult struct {
	id     uint64
	result applyResult
}

// applyEntry applies one committed entry to the state machine inside tx.
//
// The state machine is deterministic: its output depends only on the entry
// and the state before it — never on the clock, randomness or which member
// applies it — so every member reaches the same state at the same index.
// Lease expiry, the one time-dependent decision, is taken by the leader
// outside the state machine and enters it as a LeaseRevoke entry.
func (m *Member) applyEntry(tx *bolt.Tx, e *raftpb.Entry) ([]pendingResult, bool, error) {
	switch e.GetType() {
	case raftpb.EntryNormal:
		if len(e.GetData()) == 0 {
			// The empty entry a new leader appends at the start of its term.
			return nil, false, nil
		}
		req := &pb.InternalRaftRequest{}
		if err := proto.Unmarshal(e.GetData(), req); err != nil {
			// A proposal this member cannot decode cannot have come from a
			// klab member; skipping it on every member keeps them equal.
			m.lg.Error("skip undecodable entry", "index", e.GetIndex(), "err", err)
			return nil, false, nil
		}
		resp, err := m.applyRequest(tx, req)
		if err != nil && !isClientError(err) {
			return nil, false, err
		}
		return []pendingResult{{id: req.GetHeader().GetID(), result: applyResult{resp: resp, err: err}}}, false, nil
	case raftpb.EntryConfChange:
		cc := &raftpb.ConfChange{}
		if err := proto.Unmarshal(e.GetData(), cc); err != nil {
			return nil, false, fmt.Errorf("decode conf change: %w", err)
		}
		res, err := m.applyConfChange(tx, cc)
		if err != nil {
			return nil, false, err
		}
		return []pendingResult{{id: cc.GetId(), result: res}}, true, nil
	default:
		return nil, false, fmt.Errorf("unsupported entry type %s", e.GetType())
	}
}

// isClientError tells request-level failures (a failed compare, a missing
// lease: answered to the client, the state machine moves on) from storage
// failures (which stop the member).
func isClientError(err error) bool {
	if err == nil {
		return true
	}
	_, isStatus := status.FromError(err)
	return isStatus
}

// applyRequest applies one request. The space quota takes part as in
// etcd: while the NOSPACE alarm is active, a request that adds data is
// refused on every member alike; without the alarm, a request that takes
// this member's database past the quota is applied (the members' states
// must not diverge on their file sizes) and answered with the quota error,
// after which the member raises the alarm.
func (m *Member) applyRequest(tx *bolt.Tx, r *pb.InternalRaftRequest) (any, error) {
	if m.capped(r) {
		return nil, rpctypes.ErrGRPCNoSpace
	}
	fits := m.fitsQuota(tx.Size(), quotaCost(r))
	resp, err := m.applyRequestOp(tx, r)
	if err == nil && !fits {
		err = rpctypes.ErrGRPCNoSpace
	}
	return resp, err
}

func (m *Member) applyRequestOp(tx *bolt.Tx, r *pb.InternalRaftRequest) (any, error) {
	switch {
	case r.GetAlarm() != nil:
		return m.applyAlarm(tx, r.GetAlarm())
	case r.GetPut() != nil:
		resp, err := m.store.Put(tx, r.GetPut())
		m.fillHeader(headerOf(resp))
		return resp, err
	case r.GetDeleteRange() != nil:
		resp, err := m.store.DeleteRange(tx, r.GetDeleteRange())
		m.fillHeader(headerOf(resp))
		return resp, err
	case r.GetTxn() != nil:
		resp, err := m.store.Txn(tx, r.GetTxn())
		m.fillHeader(headerOf(resp))
		return resp, err
	case r.GetCompaction() != nil:
		resp, err := m.store.Compact(tx, r.GetCompaction().GetRevision())
		m.fillHeader(headerOf(resp))
		return resp, err
	case r.GetLeaseGrant() != nil:
		g := r.GetLeaseGrant()
		l, err := m.lessor.Grant(tx, g.GetID(), g.GetTTL())
		if err != nil {
			return nil, err
		}
		resp := &pb.LeaseGrantResponse{ID: l.ID, TTL: l.TTL, Header: &pb.ResponseHeader{}}
		m.fillHeader(resp.Header)
		return resp, nil
	case r.GetLeaseRevoke() != nil:
		if err := m.lessor.Revoke(tx, r.GetLeaseRevoke().GetID(), m.store); err != nil {
			return nil, err
		}
		resp := &pb.LeaseRevokeResponse{Header: &pb.ResponseHeader{}}
		m.fillHeader(resp.Header)
		return resp, nil
	case r.GetClusterMemberAttrSet() != nil:
		a := r.GetClusterMemberAttrSet()
		mi := m.members.get(a.GetMember_ID())
		if mi == nil {
			return nil, rpctypes.ErrGRPCMemberNotFound
		}
		mi.Name = a.GetMemberAttributes().GetName()
		mi.ClientURLs = a.GetMemberAttributes().GetClientUrls()
		return nil, m.members.put(tx, mi)
	default:
		return nil, fmt.Errorf("klab's etcd cannot apply request %v", r)
	}
}

// headerOf returns the response header of any response that has one, making
// sure it exists.
func headerOf(resp interface{ GetHeader() *pb.ResponseHeader }) *pb.ResponseHeader {
	if resp == nil {
		return nil
	}
	return resp.GetHeader()
}

// fillHeader completes a response header with this member's identity, the
// current raft term and, if unset, the store's revision.
func (m *Member) fillHeader(h *pb.ResponseHeader) {
	if h == nil {
		return
	}
	h.ClusterId = m.clusterID
	h.MemberId = m.id
	h.RaftTerm = m.term.Load()
	if h.Revision == 0 {
		h.Revision = m.store.Rev()
	}
}

// applyConfChange applies a membership change: validated against the
// current membership (an invalid change is cancelled on every member alike,
// by zeroing its node ID as raft's contract allows), persisted, then handed
// to raft.
func (m *Member) applyConfChange(tx *bolt.Tx, cc *raftpb.ConfChange) (applyResult, error) {
	var res applyResult
	var mi *memberInfo
	if len(cc.GetContext()) > 0 {
		mi = &memberInfo{}
		if err := json.Unmarshal(cc.GetContext(), mi); err != nil {
			mi = nil
		}
	}
	id := cc.GetNodeId()
	switch cc.GetType() {
	case raftpb.ConfChangeAddNode, raftpb.ConfChangeAddLearnerNode:
		existing := m.members.get(id)
		switch {
		case m.members.isRemoved(id):
			res.err = rpctypes.ErrGRPCMemberBadURLs
			cc.NodeId = ptrU64(0)
		case existing != nil && !(existing.IsLearner && cc.GetType() == raftpb.ConfChangeAddNode):
			res.err = rpctypes.ErrGRPCMemberExist
			cc.NodeId = ptrU64(0)
		case existing != nil: // promotion of a learner
			existing.IsLearner = false
			if err := m.members.put(tx, existing); err != nil {
				return res, err
			}
		case mi == nil:
			res.err = fmt.Errorf("conf change for %x carries no member", id)
			cc.NodeId = ptrU64(0)
		default:
			mi.IsLearner = cc.GetType() == raftpb.ConfChangeAddLearnerNode
			if err := m.members.put(tx, mi); err != nil {
				return res, err
			}
		}
	case raftpb.ConfChangeRemoveNode:
		if m.members.get(id) == nil {
			res.err = rpctypes.ErrGRPCMemberNotFound
			cc.NodeId = ptrU64(0)
		} else if err := m.members.remove(tx, id); err != nil {
			return res, err
		}
	case raftpb.ConfChangeUpdateNode:
		if m.members.get(id) == nil || mi == nil {
			res.err = rpctypes.ErrGRPCMemberNotFound
			cc.NodeId = ptrU64(0)
		} else {
			existing := m.members.get(id)
			existing.PeerURLs = mi.PeerURLs
			if err := m.members.put(tx, existing); err != nil {
				return res, err
			}
		}
	}
	cs := m.node.ApplyConfChange(cc)
	m.setConfState(cs)
	if err := raftlog.SaveConfState(tx, cs); err != nil {
		return res, err
	}
	if res.err == nil {
		res.resp = m.members.list()
	}
	m.events.Publish(Event{Member: m.cfg.Name, Kind: EventState, State: m.raftStateString(), Term: m.term.Load(),
		Detail: fmt.Sprintf("membership: %s %x", cc.GetType(), id)})
	return res, nil
}

// replayConfChange re-applies to raft a conf change that the key-value state
// already contains (entries replayed after a restart).
func (m *Member) replayConfChange(e *raftpb.Entry) error {
	if e.GetType() != raftpb.EntryConfChange {
		return nil
	}
	cc := &raftpb.ConfChange{}
	if err := proto.Unmarshal(e.GetData(), cc); err != nil {
		return fmt.Errorf("decode conf change %d: %w", e.GetIndex(), err)
	}
	// Cancelled changes were recorded as such in the membership: replay the
	// same decision.
	id := cc.GetNodeId()
	switch cc.GetType() {
	case raftpb.ConfChangeAddNode, raftpb.ConfChangeAddLearnerNode, raftpb.ConfChangeUpdateNode:
		if m.members.get(id) == nil {
			cc.NodeId = ptrU64(0)
		}
	case raftpb.ConfChangeRemoveNode:
		if !m.members.isRemoved(id) {
			cc.NodeId = ptrU64(0)
		}
	}
	m.setConfState(m.node.ApplyConfChange(cc))
	return nil
}

func ptrU64(v uint64) *uint64 { return &v }
