// Package namespace is klab's namespace controller: when a namespace is
// deleted, the API server only marks it (phase Terminating, a deletion
// timestamp, and the "kubernetes" entry still in spec.finalizers). This
// controller then deletes everything inside it — every namespaced resource
// discovery lists with the delete verb, through the metadata client, so it
// needs no types — waits until it is gone (pods take their grace period),
// reports progress in the namespace's conditions, and finally removes the
// "kubernetes" finalizer through the namespaces/finalize subresource. With
// no finalizers left, the API server deletes the namespace.
//
// As upstream, each deleted namespace is looked at only after a short
// delay (so that every API server has seen the deletion and refuses new
// objects in it), and again after half of the time its remaining pods may
// still take. Both delays are divided by the lab's speed.
package namespace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/time/rate"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/timing"
)

// Name is the namespace controller's name in the controller manager.
const Name = "namespace"

const (
	// namespaceDeletionGracePeriod is how long after a namespace event the
	// controller acts, so that every API server has seen the deletion and
	// its last-minute objects are visible.
	namespaceDeletionGracePeriod = 5 * time.Second
	// namespaceSyncPeriod is --namespace-sync-period: how often every
	// namespace is looked at again anyway.
	namespaceSyncPeriod = 5 * time.Minute
	// maxRetryDelay caps the backoff of a failing namespace, so that it is
	// retried at least this often.
	maxRetryDelay = 60 * time.Second
)

// Controller is the namespace controller.
type Controller struct {
	client   kubernetes.Interface
	metadata metadata.Interface
	// discover lists the namespaced resources the API server serves.
	discover func() ([]*metav1.APIResourceList, error)
	lister   corelisters.NamespaceLister
	synced   cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	worker   *controllerutil.Worker[string]
	speed    timing.Speed
	clock    clock.PassiveClock
	logger   *slog.Logger
}

// Init builds the namespace controller from the manager's context.
func Init(ctx context.Context, c controllerctx.Context) (controllerctx.Controller, error) {
	discover := c.Client.Discovery().ServerPreferredNamespacedResources
	return newController(c.Client, c.Metadata, discover, c.Informers.Core().V1().Namespaces(), c.Speed, c.Logger, clock.RealClock{})
}

func newController(client kubernetes.Interface, md metadata.Interface, discover func() ([]*metav1.APIResourceList, error),
	namespaces coreinformers.NamespaceInformer, speed timing.Speed, logger *slog.Logger, clk clock.PassiveClock) (*Controller, error) {
	if md == nil {
		return nil, errors.New("namespace controller needs a metadata client")
	}
	logger = componentbase.Logger(logger)
	c := &Controller{
		client:   client,
		metadata: md,
		discover: discover,
		lister:   namespaces.Lister(),
		speed:    speed,
		clock:    clk,
		logger:   logger.With("controller", Name),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedMaxOfRateLimiter(
				workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, speed.Scale(maxRetryDelay)),
				// The overall retry rate, not per namespace: 10 per second,
				// bursts of 100.
				&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
			),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "namespace"}),
	}
	handler, err := namespaces.Informer().AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { c.enqueue(obj) },
		UpdateFunc: func(_, obj interface{}) { c.enqueue(obj) },
	}, speed.Scale(namespaceSyncPeriod))
	if err != nil {
		return nil, fmt.Errorf("add namespace handler: %w", err)
	}
	c.synced = handler.HasSynced
	c.worker = &controllerutil.Worker[string]{
		Queue: c.queue, Sync: c.syncOrWait,
		OnError: func(key string, err error, _ bool) {
			c.logger.Error("Deletion of namespace failed", "namespace", key, "err", err)
		},
	}
	return c, nil
}

// enqueue queues a namespace being deleted, after the deletion grace
// period.
func (c *Controller) enqueue(obj interface{}) {
	ns, ok := obj.(*v1.Namespace)
	if !ok || ns.DeletionTimestamp == nil || ns.DeletionTimestamp.IsZero() {
		return
	}
	c.queue.AddAfter(ns.Name, c.speed.Scale(namespaceDeletionGracePeriod))
}

// Name returns "namespace".
func (c *Controller) Name() string { return Name }

// QueueLen is how many namespaces wait to be worked on.
func (c *Controller) QueueLen() int { return c.queue.Len() }

// SyncCounts returns how many namespace syncs ran and how many failed
// (content still terminating is not a failure).
func (c *Controller) SyncCounts() (syncs, failures uint64) { return c.worker.SyncCounts() }

// Run works the queue with the given number of workers until ctx is done,
// and returns once they have stopped. A namespace whose content is still
// terminating comes back after half its estimate, not counted as a
// failure; any other error retries with backoff, as upstream's.
func (c *Controller) Run(ctx context.Context, workers int) {
	controllerutil.Loop{
		Logger: c.logger,
		Synced: []cache.InformerSynced{c.synced},
		Queues: []controllerutil.Runnable{c.worker},
	}.Run(ctx, workers)
}

// sync deletes the content of a namespace being deleted.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, err := c.lister.Get(key)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get namespace %s from cache: %w", key, err)
	}
	return c.deleteNamespace(ctx, ns.Name)
}

// syncOrWait is the worker's sync: content still terminating brings the
// namespace back after half its estimate, as upstream's does.
func (c *Controller) syncOrWait(ctx context.Context, key string) error {
	err := c.sync(ctx, key)
	var remaining *resourcesRemainingError
	if errors.As(err, &remaining) {
		delay := c.speed.Scale(time.Duration(remaining.Estimate/2+1) * time.Second)
		c.logger.Debug("Content remaining in namespace", "namespace", key, "wait", delay)
		return controllerutil.RequeueAfter(delay)
	}
	return err
}
