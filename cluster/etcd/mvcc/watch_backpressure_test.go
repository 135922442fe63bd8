package mvcc

import (
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// TestWatchControlQueueBounded checks the back-pressure of a stream whose
// client creates and cancels watchers without reading a single response:
// the creating goroutine (the gRPC receive loop) must block once the
// control queue is full, as etcd's does on its ctrlStreamBufLen channel,
// instead of queueing every response in memory. Once the client reads,
// every response arrives, in order.
func TestWatchControlQueueBounded(t *testing.T) {
	ts := newTestStore(t)
	ws := newStream(t, ts)
	const pairs = 5000
	var done atomic.Int64
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for i := 0; i < pairs; i++ {
			id, err := ws.Watch(&pb.WatchCreateRequest{Key: []byte("k")})
			if err != nil {
				return // the stream was closed
			}
			if ws.Cancel(id) != nil {
				return
			}
			done.Add(1)
		}
	}()

	// Wait until the creator stalls (or, without a bound, finishes).
	last := int64(-1)
	for stable := 0; stable < 5; {
		select {
		case <-finished:
			stable = 5
		case <-time.After(50 * time.Millisecond):
			if n := done.Load(); n == last {
				stable++
			} else {
				last, stable = n, 0
			}
		}
	}
	ws.mu.Lock()
	queued := len(ws.ctrl)
	ws.mu.Unlock()
	if n := done.Load(); n == pairs || queued > ctrlQueueLen {
		t.Fatalf("a client that reads nothing got %d of %d create/cancel pairs accepted and %d responses queued; want the creator blocked with at most %d queued",
			n, pairs, queued, ctrlQueueLen)
	}
	// What is held is the control queue, the stream's output buffer and
	// the batch being delivered: a constant, whatever the client sends.
	if n := done.Load(); 2*n > int64(outBufferLen+2*ctrlQueueLen+2) {
		t.Errorf("%d pairs accepted before blocking; want at most about %d responses held", n, outBufferLen+2*ctrlQueueLen)
	}

	// The client reads: everything arrives, each watcher created before it
	// is canceled, with increasing IDs reused from 0 (each is free again).
	for i := 0; i < pairs; i++ {
		c := recv(t, ws)
		if !c.Created || c.Canceled {
			t.Fatalf("response %d: %v, want a creation", 2*i, c)
		}
		x := recv(t, ws)
		if !x.Canceled || x.WatchId != c.WatchId {
			t.Fatalf("response %d: %v, want the cancel of %d", 2*i+1, x, c.WatchId)
		}
	}
	select {
	case <-finished:
	case <-time.After(recvTimeout):
		t.Fatal("the creator did not finish once the client read")
	}
}
