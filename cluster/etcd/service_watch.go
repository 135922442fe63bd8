package etcd

import (
	"errors"
	"io"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/klab-dev/klab/cluster/etcd/mvcc"
)

// watchServer is the etcd v3 Watch service.
type watchServer struct {
	pb.UnimplementedWatchServer
	m *Member
}

// Watch serves one bidirectional watch stream, which may carry many
// watchers. The watch stream of the store emits every response itself —
// created, canceled, events, progress — in the order the client must see
// them (a watcher's "created" before its events), so this service only
// reads requests and forwards responses.
func (s *watchServer) Watch(stream pb.Watch_WatchServer) error {
	ws := s.m.store.NewWatchStream()
	defer ws.Close()
	errc := make(chan error, 2)
	go func() { errc <- s.recvLoop(stream, ws) }()
	go func() { errc <- s.sendLoop(stream, ws) }()
	select {
	case err := <-errc:
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	case <-stream.Context().Done():
		return stream.Context().Err()
	case <-s.m.stopc:
		// Unavailable, as etcd's stopping server ends its streams: clientv3
		// then resumes the watch on another member (or this one once it is
		// back) from the next revision. Any other code halts the watch.
		return rpctypes.ErrGRPCStopped
	}
}

func (s *watchServer) recvLoop(stream pb.Watch_WatchServer, ws *mvcc.WatchStream) error {
	for {
		req, err := stream.Recv()
		if err != nil {
			return err
		}
		switch {
		case req.GetCreateRequest() != nil:
			cr := req.GetCreateRequest()
			if len(cr.GetKey()) == 0 {
				// etcd watches from the empty key as if it were "\x00".
				cr.Key = []byte{0}
			}
			// A failed create is answered on the stream by the store.
			_, _ = ws.Watch(cr)
		case req.GetCancelRequest() != nil:
			_ = ws.Cancel(req.GetCancelRequest().GetWatchId())
		case req.GetProgressRequest() != nil:
			ws.RequestProgress()
		}
	}
}

func (s *watchServer) sendLoop(stream pb.Watch_WatchServer, ws *mvcc.WatchStream) error {
	for {
		select {
		case r, ok := <-ws.Chan():
			if !ok {
				return nil
			}
			if r.Header == nil {
				r.Header = &pb.ResponseHeader{}
			}
			s.m.fillHeader(r.Header)
			if err := stream.Send(r); err != nil {
				return err
			}
		case <-stream.Context().Done():
			return stream.Context().Err()
		}
	}
}
