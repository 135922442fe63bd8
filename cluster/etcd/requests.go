package etcd

import (
	"context"
	"net/http"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/klab-dev/klab/cluster/internal/eventstream"
)

// ComponentUserAgent is the gRPC user agent klab's own components give
// their etcd clients (grpc-go adds its own after it), so that the request
// stream tells the API server's requests from a person's etcdctl, whose
// user agent is grpc-go's alone.
const ComponentUserAgent = "klab-component"

// RequestEvent is one client request a member served, as
// /debug/klab/requests streams it: the gRPC method (Range, Put,
// DeleteRange, Txn, Compact, Watch, LeaseGrant, MemberList, Status, ...),
// the key it names, and how it ended.
type RequestEvent struct {
	Seq uint64 `json:"seq"`
	// Time is when the member answered (or, for a watch, read the
	// create request); LatencyMS how long it took.
	Time   time.Time `json:"time"`
	Member string    `json:"member"`
	// Service and Method name the call as etcd's gRPC API does:
	// etcdserverpb.KV and Range for /etcdserverpb.KV/Range.
	Service string `json:"service"`
	Method  string `json:"method"`
	// Key and RangeEnd are the request's key and range end, when it names
	// keys (a Txn: its first operation's); Keys counts the keys a Txn
	// names, in its compares and its operations.
	Key      string `json:"key,omitempty"`
	RangeEnd string `json:"rangeEnd,omitempty"`
	Keys     int    `json:"keys,omitempty"`
	// Code is the gRPC status code's name: OK, InvalidArgument,
	// Unavailable, ...; Error its message when not OK.
	Code  string `json:"code"`
	Error string `json:"error,omitempty"`
	// UserAgent is the client's gRPC user agent; Component says it is one
	// of klab's components (ComponentUserAgent), not a person's client.
	UserAgent string  `json:"userAgent,omitempty"`
	Component bool    `json:"component,omitempty"`
	Peer      string  `json:"peer,omitempty"`
	LatencyMS float64 `json:"latencyMs"`
}

// requestRingSize is how many requests a new reader of the stream is
// replayed.
const requestRingSize = 512

func newRequestHub() *eventstream.Hub[RequestEvent] {
	return eventstream.NewHub(requestRingSize, func(e *RequestEvent, seq uint64, now time.Time) { e.Seq, e.Time = seq, now })
}

// recordUnary publishes every unary request on the request stream once it
// is answered.
func (m *Member) recordUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	ev := m.requestEvent(ctx, info.FullMethod, start, err)
	describeRequest(&ev, req)
	m.requests.Publish(ev)
	return resp, err
}

// recordStream publishes each watch a Watch stream creates (a stream is
// long; its requests are what a reader wants to see), and any other
// stream once it ends.
func (m *Member) recordStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if strings.HasSuffix(info.FullMethod, "/Watch") {
		return handler(srv, &watchRecorder{ServerStream: ss, m: m, method: info.FullMethod})
	}
	start := time.Now()
	err := handler(srv, ss)
	m.requests.Publish(m.requestEvent(ss.Context(), info.FullMethod, start, err))
	return err
}

// watchRecorder publishes a Watch event for every create request read
// from the stream.
type watchRecorder struct {
	grpc.ServerStream
	m      *Member
	method string
}

func (w *watchRecorder) RecvMsg(msg any) error {
	err := w.ServerStream.RecvMsg(msg)
	if err != nil {
		return err
	}
	if req, ok := msg.(*pb.WatchRequest); ok {
		if c := req.GetCreateRequest(); c != nil {
			ev := w.m.requestEvent(w.Context(), w.method, time.Now(), nil)
			ev.Key, ev.RangeEnd = string(c.Key), string(c.RangeEnd)
			w.m.requests.Publish(ev)
		}
	}
	return nil
}

// requestEvent describes a call to fullMethod that began at start and
// ended with err.
func (m *Member) requestEvent(ctx context.Context, fullMethod string, start time.Time, err error) RequestEvent {
	service, method := splitMethod(fullMethod)
	// Time is left to the hub: when the request was answered, in the
	// order of the stream, which a reader that resumes by time relies on.
	ev := RequestEvent{
		Member: m.cfg.Name, Service: service, Method: method,
		Code:      status.Code(err).String(),
		LatencyMS: float64(time.Since(start).Microseconds()) / 1000,
	}
	if err != nil {
		ev.Error = status.Convert(err).Message()
	}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if ua := md.Get("user-agent"); len(ua) > 0 {
			ev.UserAgent = ua[0]
			ev.Component = strings.HasPrefix(ua[0], ComponentUserAgent)
		}
	}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		ev.Peer = p.Addr.String()
	}
	return ev
}

// splitMethod splits /etcdserverpb.KV/Range into its service and method.
func splitMethod(full string) (service, method string) {
	full = strings.TrimPrefix(full, "/")
	if i := strings.LastIndexByte(full, '/'); i >= 0 {
		return full[:i], full[i+1:]
	}
	return "", full
}

// describeRequest sets the keys a request names.
func describeRequest(ev *RequestEvent, req any) {
	switch r := req.(type) {
	case *pb.RangeRequest:
		ev.Key, ev.RangeEnd = string(r.Key), string(r.RangeEnd)
	case *pb.PutRequest:
		ev.Key = string(r.Key)
	case *pb.DeleteRangeRequest:
		ev.Key, ev.RangeEnd = string(r.Key), string(r.RangeEnd)
	case *pb.TxnRequest:
		first := true
		name := func(key, end []byte) {
			ev.Keys++
			if first {
				ev.Key, ev.RangeEnd, first = string(key), string(end), false
			}
		}
		for _, c := range r.Compare {
			name(c.Key, c.RangeEnd)
		}
		for _, ops := range [][]*pb.RequestOp{r.Success, r.Failure} {
			for _, op := range ops {
				switch o := op.Request.(type) {
				case *pb.RequestOp_RequestRange:
					name(o.RequestRange.Key, o.RequestRange.RangeEnd)
				case *pb.RequestOp_RequestPut:
					name(o.RequestPut.Key, nil)
				case *pb.RequestOp_RequestDeleteRange:
					name(o.RequestDeleteRange.Key, o.RequestDeleteRange.RangeEnd)
				}
			}
		}
	}
}

// serveRequests streams the member's requests (/debug/klab/requests),
// recent ones first. Every request is routine: a reader that draws them
// a few times a second gives ?quiet=.
func (m *Member) serveRequests(w http.ResponseWriter, r *http.Request) {
	eventstream.Serve(w, r, m.requests, eventstream.Options[RequestEvent]{
		Routine: func(RequestEvent) bool { return true },
		Status:  func() any { return m.Status() },
		Done:    m.stopc,
	})
}
