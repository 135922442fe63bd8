package controllerutil

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
)

func TestWorkerQueueRules(t *testing.T) {
	failing := errors.New("sync failed")
	tests := []struct {
		name       string
		result     error
		maxRetries int
		requeues   int // failed syncs of the key before this one
		wantQueued bool
		wantDrop   bool
		wantFailed uint64
	}{
		{name: "synced: forgotten", result: nil},
		{name: "failed: requeued", result: failing, wantQueued: true, wantFailed: 1},
		{name: "failed without a limit: requeued for ever", result: failing, requeues: 100, wantQueued: true, wantFailed: 1},
		{name: "failed under the limit: requeued", result: failing, maxRetries: 3, requeues: 2, wantQueued: true, wantFailed: 1},
		{name: "failed at the limit: given up", result: failing, maxRetries: 3, requeues: 3, wantDrop: true, wantFailed: 1},
		{name: "waiting: back later, not a failure", result: RequeueAfter(10 * time.Millisecond), wantQueued: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limiter := workqueue.DefaultTypedControllerRateLimiter[string]()
			for range tt.requeues {
				limiter.When("k") // a failure of k
			}
			q := workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[string]{Name: "test"})
			defer q.ShutDown()
			q.Add("k")
			var dropped, told bool
			w := &Worker[string]{
				Queue: q, MaxRetries: tt.maxRetries,
				Sync:    func(context.Context, string) error { return tt.result },
				OnError: func(_ string, _ error, d bool) { told, dropped = true, d },
			}
			if !w.ProcessNextWorkItem(context.Background()) {
				t.Fatal("no key processed")
			}
			if dropped != tt.wantDrop || told != (tt.wantFailed > 0) {
				t.Errorf("OnError told %v, dropped %v; want told %v, dropped %v", told, dropped, tt.wantFailed > 0, tt.wantDrop)
			}
			if syncs, failures := w.SyncCounts(); syncs != 1 || failures != tt.wantFailed {
				t.Errorf("counts %d syncs, %d failures; want 1, %d", syncs, failures, tt.wantFailed)
			}
			wantRequeues := 0
			if tt.wantQueued && tt.wantFailed > 0 {
				wantRequeues = tt.requeues + 1 // one more step of its backoff
			}
			if n := q.NumRequeues("k"); n != wantRequeues {
				t.Errorf("the key has %d requeues, want %d", n, wantRequeues)
			}
			if tt.requeues > 2 {
				return // its backoff is too long to wait for
			}
			back := make(chan string, 1)
			go func() {
				k, quit := q.Get()
				if !quit {
					back <- k
				}
			}()
			select {
			case <-back:
				if !tt.wantQueued {
					t.Error("the key came back")
				}
			case <-time.After(500 * time.Millisecond):
				if tt.wantQueued {
					t.Error("the key did not come back")
				}
			}
		})
	}
}

func TestLoopRunsQueuesUntilCancelled(t *testing.T) {
	a, b := NewQueue[string]("a"), NewQueue[int]("b")
	var synced atomic.Int32
	ready := false
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Loop{
			Logger: componentbase.Logger(nil),
			Synced: []cache.InformerSynced{func() bool { return true }},
			Ready:  func(context.Context) bool { ready = true; return true },
			Queues: []Runnable{
				&Worker[string]{Queue: a, Sync: func(context.Context, string) error { synced.Add(1); return nil }},
				&Worker[int]{Queue: b, Sync: func(context.Context, int) error { synced.Add(1); return nil }},
			},
		}.Run(ctx, 2)
	}()
	a.Add("x")
	b.Add(1)
	deadline := time.Now().Add(5 * time.Second)
	for synced.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if synced.Load() != 2 || !ready {
		t.Fatalf("synced %d keys, ready %v; want both queues worked after Ready", synced.Load(), ready)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if !a.ShuttingDown() || !b.ShuttingDown() {
		t.Error("a queue was left running")
	}
}
