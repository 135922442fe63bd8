package etcd

import (
	"context"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/api/v3/version"
	"go.etcd.io/raft/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// maintenanceServer is the etcd v3 Maintenance service.
type maintenanceServer struct {
	pb.UnimplementedMaintenanceServer
	m *Member
}

// Status reports what etcdctl endpoint status prints. Version is the etcd
// API version klab's member implements.
func (s *maintenanceServer) Status(ctx context.Context, r *pb.StatusRequest) (*pb.StatusResponse, error) {
	st := s.m.node.Status()
	size, inUse := s.m.dbSizes()
	resp := &pb.StatusResponse{
		Header:           &pb.ResponseHeader{},
		Version:          version.Version,
		DbSize:           size,
		DbSizeInUse:      inUse,
		DbSizeQuota:      s.m.cfg.QuotaBackendBytes,
		Leader:           st.Lead,
		RaftIndex:        st.HardState.GetCommit(),
		RaftTerm:         st.HardState.GetTerm(),
		RaftAppliedIndex: s.m.applied.Load(),
		IsLearner:        s.m.isLearner(),
	}
	if st.Lead == raft.None {
		resp.Errors = append(resp.Errors, rpctypes.ErrNoLeader.Error())
	}
	resp.Errors = append(resp.Errors, s.m.alarmStrings()...)
	s.m.fillHeader(resp.Header)
	return resp, nil
}

func (m *Member) isLearner() bool {
	mi := m.members.get(m.id)
	return mi != nil && mi.IsLearner
}

// snapshotChunk is the size of one Snapshot response, as in etcd.
const snapshotChunk = 32 * 1024

// Snapshot streams the key-value state as a bbolt database followed by its
// SHA-256, which is what etcdctl snapshot save expects.
func (s *maintenanceServer) Snapshot(r *pb.SnapshotRequest, stream pb.Maintenance_SnapshotServer) error {
	w := &snapshotWriter{stream: stream, m: s.m}
	if _, err := s.m.writeSnapshotStream(stream.Context(), w); err != nil {
		return err
	}
	return w.flush()
}

// snapshotWriter cuts the stream into chunks. RemainingBytes is not known in
// advance for the trailing checksum, so each chunk reports what follows it
// in the database file plus the checksum.
type snapshotWriter struct {
	stream pb.Maintenance_SnapshotServer
	m      *Member
	buf    []byte
	sent   bool
}

func (w *snapshotWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for len(w.buf) > snapshotChunk {
		if err := w.send(w.buf[:snapshotChunk], uint64(len(w.buf)-snapshotChunk)); err != nil {
			return 0, err
		}
		w.buf = w.buf[snapshotChunk:]
	}
	return len(p), nil
}

func (w *snapshotWriter) send(blob []byte, remaining uint64) error {
	resp := &pb.SnapshotResponse{Header: &pb.ResponseHeader{}, RemainingBytes: remaining, Blob: append([]byte(nil), blob...)}
	if !w.sent {
		resp.Version = version.Version
		w.sent = true
	}
	w.m.fillHeader(resp.Header)
	return w.stream.Send(resp)
}

func (w *snapshotWriter) flush() error {
	if len(w.buf) == 0 && w.sent {
		return nil
	}
	err := w.send(w.buf, 0)
	w.buf = nil
	return err
}

// MoveLeader hands leadership to another voting member (etcdctl
// move-leader). It must be asked of the current leader.
func (s *maintenanceServer) MoveLeader(ctx context.Context, r *pb.MoveLeaderRequest) (*pb.MoveLeaderResponse, error) {
	target := r.GetTargetID()
	if !s.m.isLeader() {
		return nil, rpctypes.ErrGRPCNotLeader
	}
	mi := s.m.members.get(target)
	if mi == nil || mi.IsLearner {
		return nil, rpctypes.ErrGRPCBadLeaderTransferee
	}
	ctx, cancel := context.WithTimeout(ctx, s.m.requestTimeout())
	defer cancel()
	s.m.node.TransferLeadership(ctx, s.m.id, target)
	for {
		c := s.m.leaderNotify.wait()
		if s.m.lead.Load() == target {
			resp := &pb.MoveLeaderResponse{Header: &pb.ResponseHeader{}}
			s.m.fillHeader(resp.Header)
			return resp, nil
		}
		select {
		case <-c:
		case <-time.After(s.m.electionTimeout()):
			// Ask again in case the transfer request was lost.
			if s.m.isLeader() {
				s.m.node.TransferLeadership(ctx, s.m.id, target)
			}
		case <-ctx.Done():
			return nil, rpctypes.ErrGRPCTimeoutDueToLeaderFail
		}
	}
}

// Alarm lists, raises or disarms alarms (etcdctl alarm list, alarm
// disarm). Every action goes through raft, as in etcd: the list is the
// cluster's, read at a point in the log, and a change applies on every
// member.
func (s *maintenanceServer) Alarm(ctx context.Context, r *pb.AlarmRequest) (*pb.AlarmResponse, error) {
	req := &pb.AlarmRequest{Action: r.GetAction(), MemberID: r.GetMemberID(), Alarm: r.GetAlarm()}
	resp, err := s.m.propose(ctx, &pb.InternalRaftRequest{Alarm: req})
	if err != nil {
		return nil, err
	}
	return resp.(*pb.AlarmResponse), nil
}

// Defragment rewrites this member's database compactly (etcdctl defrag);
// it concerns only the member asked.
func (s *maintenanceServer) Defragment(ctx context.Context, r *pb.DefragmentRequest) (*pb.DefragmentResponse, error) {
	s.m.lg.Info("starting defragment")
	if err := s.m.Defragment(ctx); err != nil {
		s.m.lg.Warn("failed to defragment", "err", err)
		return nil, status.Error(codes.Internal, err.Error())
	}
	resp := &pb.DefragmentResponse{Header: &pb.ResponseHeader{}}
	s.m.fillHeader(resp.Header)
	return resp, nil
}
