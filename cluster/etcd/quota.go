package etcd

import (
	"context"
	"errors"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// The space quota, as etcd's backend quota: a write that would take the
// database past QuotaBackendBytes is refused with "etcdserver: mvcc:
// database space exceeded" and raises the NOSPACE alarm through raft. While
// that alarm is active, every member refuses writes that add data (puts,
// transactions with a put, lease grants); reads, deletes and compaction
// still work, so that an operator can make room: compact, defragment, then
// disarm the alarm.
//
// Unlike etcd, klab keeps the raft log in the same bbolt file as the
// key-value state, so the quota counts the log too; a raft snapshot (every
// SnapshotCount entries) trims it.

const (
	// DefaultQuotaBackendBytes is etcd's default quota (2 GiB).
	DefaultQuotaBackendBytes = int64(2 << 30)
	// kvOverhead and leaseOverhead are etcd's estimates of what a key's
	// metadata and a lease cost beyond their bytes.
	kvOverhead    = 256
	leaseOverhead = 64
)

// quotaCost estimates how many bytes a request adds to the database: 0 for
// requests that add nothing (deletes, ranges, compaction). A transaction
// costs its costlier branch.
func quotaCost(r *pb.InternalRaftRequest) int {
	switch {
	case r.GetPut() != nil:
		return putCost(r.GetPut())
	case r.GetTxn() != nil:
		return txnCost(r.GetTxn())
	case r.GetLeaseGrant() != nil:
		return leaseOverhead
	}
	return 0
}

func putCost(p *pb.PutRequest) int { return kvOverhead + len(p.GetKey()) + len(p.GetValue()) }

func txnCost(t *pb.TxnRequest) int {
	branch := func(ops []*pb.RequestOp) int {
		n := 0
		for _, op := range ops {
			switch {
			case op.GetRequestPut() != nil:
				n += putCost(op.GetRequestPut())
			case op.GetRequestTxn() != nil:
				n += txnCost(op.GetRequestTxn())
			}
		}
		return n
	}
	return max(branch(t.GetSuccess()), branch(t.GetFailure()))
}

// quotaEnabled reports whether the member enforces a quota.
func (m *Member) quotaEnabled() bool { return m.cfg.QuotaBackendBytes > 0 }

// fitsQuota reports whether cost more bytes fit in a database of size.
func (m *Member) fitsQuota(size int64, cost int) bool {
	return !m.quotaEnabled() || cost == 0 || size+int64(cost) < m.cfg.QuotaBackendBytes
}

// checkQuota is the client-side gate in front of a write, as etcd's quota
// KV server: a write that does not fit raises the NOSPACE alarm and is
// refused before it enters the log.
func (m *Member) checkQuota(ctx context.Context, r *pb.InternalRaftRequest) error {
	cost := quotaCost(r)
	if m.fitsQuota(m.dbSize(), cost) {
		return nil
	}
	m.raiseNoSpace(ctx)
	return rpctypes.ErrGRPCNoSpace
}

// raiseNoSpace proposes this member's NOSPACE alarm. A failure is logged
// only: the write that needed the room is refused either way.
func (m *Member) raiseNoSpace(ctx context.Context) {
	if m.alarms.has(pb.AlarmType_NOSPACE) {
		return
	}
	_, err := m.propose(ctx, &pb.InternalRaftRequest{Alarm: &pb.AlarmRequest{
		Action: pb.AlarmRequest_ACTIVATE, MemberID: m.id, Alarm: pb.AlarmType_NOSPACE,
	}})
	if err != nil {
		m.lg.Warn("raise NOSPACE alarm", "err", err)
	}
}

// capped reports whether applying r must be refused because the NOSPACE
// alarm is active: r would add data. The alarm is replicated state, so
// every member decides alike.
func (m *Member) capped(r *pb.InternalRaftRequest) bool {
	return quotaCost(r) > 0 && m.alarms.has(pb.AlarmType_NOSPACE)
}

// isNoSpace reports whether err is the quota's refusal.
func isNoSpace(err error) bool { return errors.Is(err, rpctypes.ErrGRPCNoSpace) }
