// Package endpointslice is the EndpointSlice controller of klab's
// kube-controller-manager, as upstream's pkg/controller/endpointslice: for
// every Service with a selector it keeps EndpointSlices listing the
// selected pods, at most 100 endpoints per slice, each endpoint with its
// ready, serving and terminating conditions, node, zone and pod. The slices
// are named <service>-<random>, labelled kubernetes.io/service-name and
// endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io,
// and owned by the Service, so the garbage collector deletes them with it.
// kube-proxy programs Service routing from these slices, so a pod's
// readiness change is written as soon as it is seen.
//
// Event handlers only enqueue a Service key; syncService and its reconciler
// converge the slices, changing as few as they can.
package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/controller/endpointslice/endpointsliceutil"
	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
	"github.com/klab-dev/klab/cluster/internal/componentbase"
)

const (
	// Name is the name kube-controller-manager's --controllers flag knows
	// this controller by (upstream's alias of its canonical name
	// "endpointslice-controller").
	Name = "endpointslice"
	// component is the source of the controller's events.
	component = "endpoint-slice-controller"
	// controllerQualifiedName is the managed-by label's value on the
	// slices this controller owns.
	controllerQualifiedName = "endpointslice-controller.k8s.io"

	// maxEndpointsPerSlice is upstream's --max-endpoints-per-slice default.
	maxEndpointsPerSlice = 100
	// maxRetries is how often a Service is retried before it is dropped
	// from the queue.
	maxRetries = 15
)

// Upstream timings, divided by the lab's speed.
const (
	// endpointSliceChangeMinSyncDelay batches syncs caused by slice
	// changes made by others.
	endpointSliceChangeMinSyncDelay = 1 * time.Second
	// defaultSyncBackOff and maxSyncBackOff bound the retry delay of a
	// failed sync: slower than other controllers, since one sync may write
	// many slices.
	defaultSyncBackOff = 1 * time.Second
	maxSyncBackOff     = 1000 * time.Second
)

// Controller keeps the EndpointSlices of selector-based Services.
type Controller struct {
	recorder record.EventRecorder
	logger   *slog.Logger

	serviceLister corelisters.ServiceLister
	podLister     corelisters.PodLister
	sliceLister   discoverylisters.EndpointSliceLister
	cachesSynced  []cache.InformerSynced

	// queue holds Service keys (namespace/name).
	queue workqueue.TypedRateLimitingInterface[string]

	reconciler   *reconciler
	tracker      *sliceTracker
	triggerTimes *endpointsliceutil.TriggerTimeTracker
	// sliceChangeDelay is endpointSliceChangeMinSyncDelay at lab speed.
	sliceChangeDelay time.Duration
}

var _ controllerctx.Controller = (*Controller)(nil)

// Init builds the EndpointSlice controller and registers its handlers on
// the shared Service, Pod, Node and EndpointSlice informers.
func Init(_ context.Context, c controllerctx.Context) (controllerctx.Controller, error) {
	return newController(c)
}

func newController(c controllerctx.Context) (*Controller, error) {
	if c.Client == nil || c.Informers == nil || c.Recorder == nil {
		return nil, errors.New("endpointslice controller: context needs a client, informers and a recorder")
	}
	logger := componentbase.Logger(c.Logger)
	services := c.Informers.Core().V1().Services()
	pods := c.Informers.Core().V1().Pods()
	nodes := c.Informers.Core().V1().Nodes()
	endpointSlices := c.Informers.Discovery().V1().EndpointSlices()
	tracker := newSliceTracker()
	ec := &Controller{
		recorder:      c.Recorder(component),
		logger:        logger.With("controller", Name),
		serviceLister: services.Lister(),
		podLister:     pods.Lister(),
		sliceLister:   endpointSlices.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedMaxOfRateLimiter(
				workqueue.NewTypedItemExponentialFailureRateLimiter[string](c.Speed.Scale(defaultSyncBackOff), c.Speed.Scale(maxSyncBackOff)),
				// 10 qps, 100 burst, for all retries together.
				&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
			),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "endpoint_slice"},
		),
		reconciler: &reconciler{
			client:               c.Client,
			nodeLister:           nodes.Lister(),
			maxEndpointsPerSlice: maxEndpointsPerSlice,
			tracker:              tracker,
		},
		tracker:          tracker,
		triggerTimes:     endpointsliceutil.NewTriggerTimeTracker(),
		sliceChangeDelay: c.Speed.Scale(endpointSliceChangeMinSyncDelay),
	}
	var err error
	ec.cachesSynced, err = controllerutil.AddEventHandlers(
		controllerutil.EventHandler{Informer: services.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc:    ec.enqueueService,
			UpdateFunc: func(_, cur any) { ec.enqueueService(cur) },
			DeleteFunc: ec.enqueueService,
		}},
		controllerutil.EventHandler{Informer: pods.Informer(), Funcs: cache.ResourceEventHandlerFuncs{AddFunc: ec.addPod, UpdateFunc: ec.updatePod, DeleteFunc: ec.deletePod}},
		// Nodes are only read for their zone label.
		controllerutil.EventHandler{Informer: nodes.Informer(), Funcs: cache.ResourceEventHandlerFuncs{}},
		controllerutil.EventHandler{Informer: endpointSlices.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc:    ec.onEndpointSliceAdd,
			UpdateFunc: ec.onEndpointSliceUpdate,
			DeleteFunc: ec.onEndpointSliceDelete,
		}},
	)
	if err != nil {
		return nil, fmt.Errorf("endpointslice controller: %w", err)
	}
	return ec, nil
}

// Name returns upstream's controller name.
func (ec *Controller) Name() string { return Name }

// Run syncs Services with the given number of workers until ctx is done.
// A Service whose sync fails is retried with backoff up to maxRetries
// times in a row, as upstream's, then waits for its next change.
func (ec *Controller) Run(ctx context.Context, workers int) {
	controllerutil.Loop{
		Logger: ec.logger,
		Synced: ec.cachesSynced,
		Queues: []controllerutil.Runnable{&controllerutil.Worker[string]{
			Queue: ec.queue, Sync: ec.syncService, MaxRetries: maxRetries,
			OnError: func(key string, err error, dropped bool) {
				if !dropped {
					ec.logger.Info("Error syncing endpoint slices for service, retrying", "key", key, "err", err)
					return
				}
				ec.logger.Info("Retry budget exceeded, dropping service out of the queue", "key", key, "err", err)
				utilruntime.HandleError(err)
			},
		}},
	}.Run(ctx, workers)
}

// errStaleCache is returned when the informer cache misses the
// controller's own slice writes; the sync is retried once it caught up.
var errStaleCache = errors.New("EndpointSlice informer cache is out of date")

// syncService converges one Service's slices. A deleted Service's slices
// are left to the garbage collector (they are owned by the Service).
func (ec *Controller) syncService(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	service, err := ec.serviceLister.Services(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		ec.triggerTimes.DeleteService(namespace, name)
		ec.tracker.deleteService(namespace, name)
		return nil
	}
	if err != nil {
		return err
	}
	if service.Spec.Type == corev1.ServiceTypeExternalName || service.Spec.Selector == nil {
		// No endpoints from this controller: an ExternalName Service has
		// none, a Service without selector gets slices written by hand.
		return nil
	}

	pods, err := ec.podLister.Pods(namespace).List(labels.Set(service.Spec.Selector).AsSelectorPreValidated())
	if err != nil {
		ec.recorder.Eventf(service, corev1.EventTypeWarning, "FailedToListPods", "Error listing Pods for Service %s/%s: %v", namespace, name, err)
		return err
	}
	selector := labels.Set{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: controllerQualifiedName}.AsSelectorPreValidated()
	cached, err := ec.sliceLister.EndpointSlices(namespace).List(selector)
	if err != nil {
		ec.recorder.Eventf(service, corev1.EventTypeWarning, "FailedToListEndpointSlices", "Error listing Endpoint Slices for Service %s/%s: %v", namespace, name, err)
		return err
	}
	// Slices already being deleted are as good as gone.
	existing := cached[:0:0]
	for _, s := range cached {
		if s.DeletionTimestamp == nil {
			existing = append(existing, s)
		}
	}
	if ec.tracker.stale(service, existing) {
		return errStaleCache
	}
	triggerTime := ec.triggerTimes.ComputeEndpointLastChangeTriggerTime(namespace, service, pods)
	if err := ec.reconciler.reconcile(ctx, service, pods, existing, triggerTime); err != nil {
		ec.recorder.Eventf(service, corev1.EventTypeWarning, "FailedToUpdateEndpointSlices", "Error updating Endpoint Slices for Service %s/%s: %v", namespace, name, err)
		return err
	}
	return nil
}
