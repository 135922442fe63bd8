package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/lru"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
	"github.com/klab-dev/klab/cluster/internal/componentbase"
)

const (
	// Name is the name kube-controller-manager's --controllers flag knows
	// this controller by (upstream's alias of its canonical name
	// "garbage-collector-controller").
	Name = "garbagecollector"
	// component is the source of the controller's events.
	component = "garbage-collector-controller"
	// absentOwnerCacheSize is how many owners known to be gone are
	// remembered, saving a lookup per dependent of a deleted owner.
	absentOwnerCacheSize = 500
)

// GarbageCollector deletes objects whose owners are gone, and carries out
// foreground and orphan deletions.
type GarbageCollector struct {
	metadataClient metadata.Interface
	recorder       record.EventRecorder
	logger         *slog.Logger
	mapper         restMapper
	cachesSynced   []cache.InformerSynced

	uidToNode *uidToNode
	// graphChanges holds informer events for the graph builder.
	graphChanges workqueue.TypedRateLimitingInterface[*event]
	// attemptToDelete holds nodes to check: dependents whose owner may be
	// gone, owners deleting their dependents, owners only known from a
	// reference.
	attemptToDelete workqueue.TypedRateLimitingInterface[*node]
	// attemptToOrphan holds owners being deleted with the orphan finalizer.
	attemptToOrphan workqueue.TypedRateLimitingInterface[*node]
	// absentOwnerCache remembers owners (by UID-bearing identity) that
	// lookups found gone.
	absentOwnerCache *lru.Cache
}

var _ controllerctx.Controller = (*GarbageCollector)(nil)

// Init builds the garbage collector and registers its graph builder on the
// metadata informers of every resource klab serves (see
// monitoredResources).
func Init(_ context.Context, c controllerctx.Context) (controllerctx.Controller, error) {
	return newGarbageCollector(c)
}

func newGarbageCollector(c controllerctx.Context) (*GarbageCollector, error) {
	if c.Metadata == nil || c.MetadataInformers == nil || c.Recorder == nil {
		return nil, errors.New("garbage collector: context needs a metadata client, metadata informers and a recorder")
	}
	logger := componentbase.Logger(c.Logger)
	gc := &GarbageCollector{
		metadataClient: c.Metadata,
		recorder:       c.Recorder(component),
		logger:         logger.With("controller", Name),
		mapper:         newRESTMapper(monitoredResources),
		uidToNode:      newUIDToNode(),
		graphChanges: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[*event](),
			workqueue.TypedRateLimitingQueueConfig[*event]{Name: "garbage_collector_graph_changes"}),
		attemptToDelete: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[*node](),
			workqueue.TypedRateLimitingQueueConfig[*node]{Name: "garbage_collector_attempt_to_delete"}),
		attemptToOrphan: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[*node](),
			workqueue.TypedRateLimitingQueueConfig[*node]{Name: "garbage_collector_attempt_to_orphan"}),
		absentOwnerCache: lru.New(absentOwnerCacheSize),
	}
	for _, r := range monitoredResources {
		informer := c.MetadataInformers.ForResource(r.GroupVersionResource).Informer()
		reg, err := gc.addMonitor(informer, r)
		if err != nil {
			return nil, fmt.Errorf("garbage collector: monitor %s: %w", r.GroupVersionResource, err)
		}
		gc.cachesSynced = append(gc.cachesSynced, reg.HasSynced)
	}
	return gc, nil
}

// Name returns upstream's controller name.
func (gc *GarbageCollector) Name() string { return Name }

// Run builds the graph and, once it holds everything the informers listed,
// starts workers deleting and orphaning; it returns when ctx is done. An
// item whose attempt fails is looked at again after a backoff for as long
// as it is in the graph, as upstream's.
func (gc *GarbageCollector) Run(ctx context.Context, workers int) {
	defer gc.graphChanges.ShutDown()
	go gc.runProcessGraphChanges()
	controllerutil.Loop{
		Logger: gc.logger,
		Synced: gc.cachesSynced,
		Ready:  gc.waitForGraph,
		Queues: []controllerutil.Runnable{
			&controllerutil.Worker[*node]{Queue: gc.attemptToDelete, Sync: gc.syncAttemptToDelete},
			&controllerutil.Worker[*node]{
				Queue: gc.attemptToOrphan, Sync: gc.attemptToOrphanItem,
				OnError: func(owner *node, err error, _ bool) {
					utilruntime.HandleError(fmt.Errorf("orphan dependents of %s: %w", owner.getIdentity(), err))
				},
			},
		},
	}.Run(ctx, workers)
}

// waitForGraph waits until the graph builder has applied every object the
// informers handed it, so that no worker decides from a graph missing
// dependents (an orphaning owner would lose its finalizer before all its
// dependents were released). It reports false if ctx ended first.
func (gc *GarbageCollector) waitForGraph(ctx context.Context) bool {
	barrier := &event{eventType: barrierEvent, done: make(chan struct{})}
	gc.graphChanges.Add(barrier)
	select {
	case <-barrier.done:
	case <-ctx.Done():
		return false
	}
	gc.logger.Info("All resource monitors have synced. Proceeding to collect garbage", "objects", gc.uidToNode.len())
	return true
}

// errEnqueuedVirtualDelete means the item was found gone and the graph
// builder was told; there is nothing more to do for it.
var errEnqueuedVirtualDelete = errors.New("enqueued virtual delete event")

// errNamespacedOwnerOfClusterScopedObject marks a cluster-scoped object
// referring to a namespaced owner, which no retry can resolve.
var errNamespacedOwnerOfClusterScopedObject = errors.New("cluster-scoped objects cannot refer to namespaced owners")

// errRetry has the worker look at an item again after a backoff.
var errRetry = errors.New("look at the item again")

// syncAttemptToDelete handles one node of attemptToDelete.
func (gc *GarbageCollector) syncAttemptToDelete(ctx context.Context, n *node) error {
	if gc.attemptToDeleteWorker(ctx, n) {
		return errRetry
	}
	return nil
}

// attemptToDeleteWorker handles one node and reports whether to retry it.
func (gc *GarbageCollector) attemptToDeleteWorker(ctx context.Context, n *node) bool {
	if !n.isObserved() {
		current, ok := gc.uidToNode.read(n.getIdentity().UID)
		if !ok || current.isObserved() {
			// Gone from the graph, or seen by an informer since it was
			// queued: the informer's events take it from here.
			return false
		}
	}
	err := gc.attemptToDeleteItem(ctx, n)
	var mappingErr *restMappingError
	switch {
	case errors.Is(err, errEnqueuedVirtualDelete):
		return false
	case errors.Is(err, errNamespacedOwnerOfClusterScopedObject):
		return false
	case errors.As(err, &mappingErr):
		// An owner of a kind klab does not serve: retry with backoff in
		// case it appears, as upstream does.
		gc.logger.Debug("Error syncing item", "item", n.getIdentity().String(), "err", err)
		return true
	case err != nil:
		utilruntime.HandleError(fmt.Errorf("error syncing item %s: %w", n.getIdentity(), err))
		return true
	case !n.isObserved():
		// A virtual node that exists: check again until an informer shows
		// it or it is found gone.
		return true
	}
	return false
}
