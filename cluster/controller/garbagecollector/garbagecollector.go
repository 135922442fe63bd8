package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/lru"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
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
	logger := c.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
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
// starts workers deleting and orphaning; it returns when ctx is done.
func (gc *GarbageCollector) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer gc.attemptToDelete.ShutDown()
	defer gc.attemptToOrphan.ShutDown()
	defer gc.graphChanges.ShutDown()

	gc.logger.Info("Starting controller")
	defer gc.logger.Info("Shutting down controller")
	go gc.runProcessGraphChanges()

	if !cache.WaitForCacheSync(ctx.Done(), gc.cachesSynced...) {
		return
	}
	// The informers have handed every listed object to the graph builder;
	// wait until it has applied them, so that no worker decides from a
	// graph missing dependents (an orphaning owner would lose its
	// finalizer before all its dependents were released).
	barrier := &event{eventType: barrierEvent, done: make(chan struct{})}
	gc.graphChanges.Add(barrier)
	select {
	case <-barrier.done:
	case <-ctx.Done():
		return
	}
	gc.logger.Info("All resource monitors have synced. Proceeding to collect garbage", "objects", gc.uidToNode.len())

	for i := 0; i < workers; i++ {
		go wait.UntilWithContext(ctx, gc.runAttemptToDeleteWorker, time.Second)
		go wait.UntilWithContext(ctx, gc.runAttemptToOrphanWorker, time.Second)
	}
	<-ctx.Done()
}

func (gc *GarbageCollector) runAttemptToDeleteWorker(ctx context.Context) {
	for gc.processAttemptToDeleteWorker(ctx) {
	}
}

// errEnqueuedVirtualDelete means the item was found gone and the graph
// builder was told; there is nothing more to do for it.
var errEnqueuedVirtualDelete = errors.New("enqueued virtual delete event")

// errNamespacedOwnerOfClusterScopedObject marks a cluster-scoped object
// referring to a namespaced owner, which no retry can resolve.
var errNamespacedOwnerOfClusterScopedObject = errors.New("cluster-scoped objects cannot refer to namespaced owners")

func (gc *GarbageCollector) processAttemptToDeleteWorker(ctx context.Context) bool {
	n, quit := gc.attemptToDelete.Get()
	if quit {
		return false
	}
	defer gc.attemptToDelete.Done(n)
	if gc.attemptToDeleteWorker(ctx, n) {
		gc.attemptToDelete.AddRateLimited(n)
	} else {
		gc.attemptToDelete.Forget(n)
	}
	return true
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

func (gc *GarbageCollector) runAttemptToOrphanWorker(ctx context.Context) {
	for gc.processAttemptToOrphanWorker(ctx) {
	}
}

func (gc *GarbageCollector) processAttemptToOrphanWorker(ctx context.Context) bool {
	owner, quit := gc.attemptToOrphan.Get()
	if quit {
		return false
	}
	defer gc.attemptToOrphan.Done(owner)
	if err := gc.attemptToOrphanItem(ctx, owner); err != nil {
		utilruntime.HandleError(fmt.Errorf("orphan dependents of %s: %w", owner.getIdentity(), err))
		gc.attemptToOrphan.AddRateLimited(owner)
		return true
	}
	gc.attemptToOrphan.Forget(owner)
	return true
}
