package controllerutil

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Worker is one work queue of a controller and how its keys are synced:
// the worker loop of sample-controller, which every queue-driven
// controller of kube-controller-manager writes out for itself. The queue
// rules are the same for all of them:
//
//   - the queue never hands a key to two workers at once, and Done always
//     follows Get, so that the key can be queued again;
//   - a key that synced is forgotten by the rate limiter (its backoff
//     starts over);
//   - a key whose sync failed is queued again after the rate limiter's
//     growing delay.
//
// Where upstream's controllers differ, a Worker says so: MaxRetries for
// the controllers that give a key up (deployment, endpoints,
// endpointslice, the taint eviction's deletions), RequeueAfter for one
// that waits rather than fails (the namespace controller, while the
// namespace's content is still going away), OnError for each one's own
// log lines.
type Worker[T comparable] struct {
	// Queue holds the keys. Loop shuts it down when the controller stops.
	Queue workqueue.TypedRateLimitingInterface[T]
	// Sync converges one key; it must be safe to repeat.
	Sync func(ctx context.Context, key T) error
	// MaxRetries, above zero, gives a key up after that many failed syncs
	// in a row (until an event queues it again); zero retries it for
	// ever.
	MaxRetries int
	// OnError, if set, is told of each failed sync, and whether the key
	// was given up.
	OnError func(key T, err error, dropped bool)

	syncs, failures atomic.Uint64
}

// NewQueue returns a controller's rate-limited queue with client-go's
// default controller rate limiter (5 ms doubling to 1000 s per key, 10 per
// second overall), named as upstream names it.
func NewQueue[T comparable](name string) workqueue.TypedRateLimitingInterface[T] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[T](),
		workqueue.TypedRateLimitingQueueConfig[T]{Name: name})
}

// RequeueAfter is what a Sync returns to have its key looked at again
// after d, without it counting as a failure.
func RequeueAfter(d time.Duration) error { return &requeueAfter{d} }

type requeueAfter struct{ delay time.Duration }

func (r *requeueAfter) Error() string { return "requeue after " + r.delay.String() }

// ProcessNextWorkItem syncs one key, by the queue rules above. It reports
// false once the queue has shut down.
func (w *Worker[T]) ProcessNextWorkItem(ctx context.Context) bool {
	key, quit := w.Queue.Get()
	if quit {
		return false
	}
	defer w.Queue.Done(key)
	err := w.Sync(ctx, key)
	w.syncs.Add(1)
	var later *requeueAfter
	switch {
	case err == nil:
		w.Queue.Forget(key)
	case errors.As(err, &later):
		w.Queue.AddAfter(key, later.delay)
	case w.MaxRetries > 0 && w.Queue.NumRequeues(key) >= w.MaxRetries:
		w.failures.Add(1)
		w.Queue.Forget(key)
		w.onError(key, err, true)
	default:
		w.failures.Add(1)
		w.Queue.AddRateLimited(key)
		w.onError(key, err, false)
	}
	return true
}

func (w *Worker[T]) onError(key T, err error, dropped bool) {
	if w.OnError != nil {
		w.OnError(key, err, dropped)
	}
}

// SyncCounts returns how many syncs ran and how many of them failed (a
// RequeueAfter is not a failure).
func (w *Worker[T]) SyncCounts() (syncs, failures uint64) {
	return w.syncs.Load(), w.failures.Load()
}

// work processes keys until the queue shuts down.
func (w *Worker[T]) work(ctx context.Context) {
	for w.ProcessNextWorkItem(ctx) {
	}
}

func (w *Worker[T]) shutDown() { w.Queue.ShutDown() }

// Runnable is a Worker of any key type, for a Loop.
type Runnable interface {
	work(ctx context.Context)
	shutDown()
}

// Loop is a queue-driven controller's Run: it waits for the informers'
// caches, then works each of its queues with workers goroutines (at least
// one) until ctx ends, each started again a second after it returns (as
// wait.UntilWithContext does); then it shuts the queues down and returns
// once every worker has. Upstream's controllers return without waiting
// for their workers, since the process exits next; klab's manager goes on
// to stop the informers, which the workers read, and so waits for them.
type Loop struct {
	Logger *slog.Logger
	Synced []cache.InformerSynced
	// Ready, if set, runs once the caches have synced, before the workers
	// start (the endpoints controller looks for leftovers, the garbage
	// collector waits for its graph); false ends the loop.
	Ready  func(ctx context.Context) bool
	Queues []Runnable
}

// Run runs the loop with workers goroutines per queue until ctx ends.
func (l Loop) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer func() {
		for _, q := range l.Queues {
			q.shutDown()
		}
	}()
	l.Logger.Info("Starting controller")
	defer l.Logger.Info("Shutting down controller")
	if !cache.WaitForCacheSync(ctx.Done(), l.Synced...) {
		return
	}
	if l.Ready != nil && !l.Ready(ctx) {
		return
	}
	var wg sync.WaitGroup
	for range max(workers, 1) {
		for _, q := range l.Queues {
			wg.Go(func() { wait.UntilWithContext(ctx, q.work, time.Second) })
		}
	}
	<-ctx.Done()
	for _, q := range l.Queues {
		q.shutDown()
	}
	wg.Wait()
}

// EventHandler is what a controller registers on one informer: handlers
// that only queue keys.
type EventHandler struct {
	Informer cache.SharedIndexInformer
	Funcs    cache.ResourceEventHandler
}

// AddEventHandlers registers each handler on its informer. It returns, for
// each, what reports that the handler has been handed the informer's
// initial list: what the controller's Loop waits for.
func AddEventHandlers(handlers ...EventHandler) ([]cache.InformerSynced, error) {
	synced := make([]cache.InformerSynced, 0, len(handlers))
	for _, h := range handlers {
		reg, err := h.Informer.AddEventHandler(h.Funcs)
		if err != nil {
			return nil, fmt.Errorf("register informer handlers: %w", err)
		}
		synced = append(synced, reg.HasSynced)
	}
	return synced, nil
}
