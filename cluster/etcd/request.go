package etcd

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// nextRequestID returns an ID unique across members and restarts: the low 16
// bits of the member ID above a time-seeded counter.
func (m *Member) nextRequestID() uint64 {
	return (m.id&0xffff)<<48 | (m.reqID.Add(1) & (1<<48 - 1))
}

// propose replicates a request through raft and waits until this member has
// applied it, returning what applying it produced. A write is acknowledged
// only once it is applied, so a client that reads after a write sees it.
// A write that does not fit the space quota is refused first (quota.go).
func (m *Member) propose(ctx context.Context, r *pb.InternalRaftRequest) (any, error) {
	if err := m.checkQuota(ctx, r); err != nil {
		return nil, err
	}
	id := m.nextRequestID()
	r.Header = &pb.RequestHeader{ID: id}
	data, err := proto.Marshal(r)
	if err != nil {
		return nil, err
	}
	if len(data) > m.cfg.MaxRequestBytes {
		return nil, rpctypes.ErrGRPCRequestTooLarge
	}
	return m.proposeAndWait(ctx, id, func(ctx context.Context) error { return m.node.Propose(ctx, data) })
}

// proposeConfChange replicates a membership change and waits for it.
func (m *Member) proposeConfChange(ctx context.Context, cc *raftpb.ConfChange) ([]*memberInfo, error) {
	id := m.nextRequestID()
	cc.Id = &id
	resp, err := m.proposeAndWait(ctx, id, func(ctx context.Context) error { return m.node.ProposeConfChange(ctx, cc) })
	if err != nil {
		return nil, err
	}
	members, _ := resp.([]*memberInfo)
	return members, nil
}

// proposeAndWait hands a proposal to raft and waits for the result of
// applying the entry with request ID id, or for the request timeout.
func (m *Member) proposeAndWait(ctx context.Context, id uint64, propose func(context.Context) error) (any, error) {
	if err := m.waitLeader(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, m.requestTimeout())
	defer cancel()
	ch := m.wait.register(id)
	start := time.Now()
	if err := propose(ctx); err != nil {
		m.wait.cancel(id)
		return nil, m.proposeError(err, start)
	}
	select {
	case res := <-ch:
		return res.resp, res.err
	case <-ctx.Done():
		m.wait.cancel(id)
		return nil, m.proposeError(ctx.Err(), start)
	case <-m.stopc:
		return nil, rpctypes.ErrGRPCStopped
	}
}

// waitLeader returns once the member knows a leader, or fails with etcd's
// "no leader" error after two election timeouts — a member cut off in a
// minority answers quickly instead of hanging.
func (m *Member) waitLeader(ctx context.Context) error {
	deadline := time.NewTimer(2 * m.electionTimeout())
	defer deadline.Stop()
	for {
		c := m.leaderNotify.wait()
		if m.lead.Load() != raft.None {
			return nil
		}
		select {
		case <-c:
		case <-deadline.C:
			return rpctypes.ErrGRPCNoLeader
		case <-ctx.Done():
			return contextError(ctx.Err())
		case <-m.stopc:
			return rpctypes.ErrGRPCStopped
		}
	}
}

// proposeError turns a failed proposal into the error etcd would return.
func (m *Member) proposeError(err error, start time.Time) error {
	switch {
	case errors.Is(err, raft.ErrProposalDropped):
		return rpctypes.ErrGRPCNoLeader
	case errors.Is(err, context.Canceled):
		return rpctypes.ErrGRPCCanceled
	case errors.Is(err, context.DeadlineExceeded):
		if m.lead.Load() == raft.None {
			return rpctypes.ErrGRPCNoLeader
		}
		if time.Since(start) > m.electionTimeout() && m.leaderChangedSince(start) {
			return rpctypes.ErrGRPCTimeoutDueToLeaderFail
		}
		return rpctypes.ErrGRPCTimeout
	}
	return err
}

func (m *Member) leaderChangedSince(t time.Time) bool {
	return m.lastLeaderChange.Load() > t.UnixNano()
}

func contextError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return rpctypes.ErrGRPCTimeout
	}
	return rpctypes.ErrGRPCCanceled
}

// linearizableReadNotify returns once this member has applied everything
// committed before the call: the read index protocol. Concurrent reads share
// one ReadIndex round, as in etcd's linearizableReadLoop.
func (m *Member) linearizableReadNotify(ctx context.Context) error {
	nr := m.readNotifier.Load()
	select {
	case m.readwaitc <- struct{}{}:
	default:
	}
	select {
	case <-nr.c:
		return nr.err
	case <-ctx.Done():
		return contextError(ctx.Err())
	case <-m.stopc:
		return rpctypes.ErrGRPCStopped
	}
}

// readLoop runs ReadIndex rounds for waiting reads.
func (m *Member) readLoop() {
	defer m.wg.Done()
	for {
		select {
		case <-m.readwaitc:
		case <-m.stopc:
			return
		}
		nr := m.readNotifier.Swap(newReadNotifier())
		nr.notify(m.readIndexRound())
	}
}

// readIndexRound asks the leader for the current commit index (confirmed by
// a heartbeat round with a quorum) and waits until it is applied here.
func (m *Member) readIndexRound() error {
	id := m.nextRequestID()
	rctx := make([]byte, 8)
	binary.BigEndian.PutUint64(rctx, id)
	deadline := time.NewTimer(m.requestTimeout())
	defer deadline.Stop()
	if err := m.waitLeader(ctxFromStop(m.stopc)); err != nil {
		return err
	}
	retry := time.NewTicker(500 * time.Millisecond)
	defer retry.Stop()
	send := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), m.electionTimeout())
		defer cancel()
		if err := m.node.ReadIndex(ctx, rctx); err != nil {
			if errors.Is(err, raft.ErrStopped) {
				return rpctypes.ErrGRPCStopped
			}
		}
		return nil
	}
	if err := send(); err != nil {
		return err
	}
	var index uint64
	for index == 0 {
		select {
		case rs := <-m.readStatec:
			if len(rs.RequestCtx) == 8 && binary.BigEndian.Uint64(rs.RequestCtx) == id {
				index = rs.Index
			}
		case <-retry.C:
			// The request or its answer may have been lost (a leader change,
			// a dropped message): ask again, as etcd does.
			if m.lead.Load() == raft.None {
				return rpctypes.ErrGRPCNoLeader
			}
			if err := send(); err != nil {
				return err
			}
		case <-deadline.C:
			if m.lead.Load() == raft.None {
				return rpctypes.ErrGRPCNoLeader
			}
			return rpctypes.ErrGRPCTimeout
		case <-m.stopc:
			return rpctypes.ErrGRPCStopped
		}
	}
	if m.isLeader() {
		// raft answers a lone voter's ReadIndex with its commit index at
		// once, even before it has committed an entry of its own term,
		// and after a restart that index can trail writes acknowledged
		// before it (their commit index reached the disk only with the
		// apply that answered them). Waiting for the term's first entry
		// to be applied closes the gap, as raft's wait does for a leader
		// of several voters.
		term := m.term.Load()
		return m.waitUntil(func() bool { return m.applied.Load() >= index && m.appliedTerm.Load() >= term }, deadline.C)
	}
	return m.waitApplied(index, deadline.C)
}

// waitApplied waits until the applied index reaches index.
func (m *Member) waitApplied(index uint64, deadline <-chan time.Time) error {
	return m.waitUntil(func() bool { return m.applied.Load() >= index }, deadline)
}

// waitUntil waits until applying entries makes cond true.
func (m *Member) waitUntil(cond func() bool, deadline <-chan time.Time) error {
	for {
		c := m.appliedNotify.wait()
		if cond() {
			return nil
		}
		select {
		case <-c:
		case <-deadline:
			return rpctypes.ErrGRPCTimeout
		case <-m.stopc:
			return rpctypes.ErrGRPCStopped
		}
	}
}
