package etcd_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

// TestWatchSlowClientIsHeldBack is the member-level side of the bounded
// control queue: a client on a real socket that creates and cancels
// watchers as fast as it can, without reading a single response, must
// find its sends stalled by flow control, as against etcd, instead of
// having the member queue every response. Once it reads, every response
// arrives, each creation before its cancel.
func TestWatchSlowClientIsHeldBack(t *testing.T) {
	c := etcdtest.New(t, 1, nil)
	// Small fixed windows: the client takes little off the wire, as a
	// slow reader does.
	conn, err := grpc.NewClient(strings.TrimPrefix(c.Peers[0].ClientURL, "http://"),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stream, err := pb.NewWatchClient(conn).Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}

	const pairs = 30000
	key := []byte("/" + strings.Repeat("k", 1023))
	var sent atomic.Int64
	sendErr := make(chan error, 1)
	go func() {
		for i := int64(1); i <= pairs; i++ {
			create := &pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: &pb.WatchCreateRequest{Key: key, WatchId: i}}}
			cancelReq := &pb.WatchRequest{RequestUnion: &pb.WatchRequest_CancelRequest{CancelRequest: &pb.WatchCancelRequest{WatchId: i}}}
			if err := stream.Send(create); err != nil {
				sendErr <- err
				return
			}
			if err := stream.Send(cancelReq); err != nil {
				sendErr <- err
				return
			}
			sent.Store(i)
		}
		sendErr <- nil
	}()

	// Wait until the sender stalls, or finishes.
	last := int64(-1)
	for stable := 0; stable < 10; {
		select {
		case err := <-sendErr:
			t.Fatalf("the client sent all %d create/cancel pairs without reading a response (err %v): the member buffered them all", pairs, err)
		case <-time.After(100 * time.Millisecond):
			if n := sent.Load(); n == last {
				stable++
			} else {
				last, stable = n, 0
			}
		}
	}
	t.Logf("the client's sends stalled after %d of %d pairs", last, pairs)

	// Now the client reads: every response, in order.
	for i := int64(1); i <= pairs; i++ {
		for _, want := range []string{"created", "canceled"} {
			resp, err := stream.Recv()
			if err != nil {
				t.Fatalf("pair %d: %v", i, err)
			}
			ok := resp.WatchId == i && (want == "created" && resp.Created && !resp.Canceled || want == "canceled" && resp.Canceled)
			if !ok {
				t.Fatalf("pair %d: got %v, want %s", i, resp, want)
			}
		}
	}
	if err := <-sendErr; err != nil {
		t.Fatal(err)
	}
}
