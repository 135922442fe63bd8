// Package endpoints is the endpoints controller of klab's
// kube-controller-manager, as upstream's pkg/controller/endpoint: for every
// Service with a selector it keeps one Endpoints object of the same name
// listing the selected pods, ready ones under addresses and the others
// under notReadyAddresses, with the Service's ports resolved on each pod.
// Services without a selector are left alone (their Endpoints are written by
// hand); the Endpoints of a deleted Service are deleted.
//
// The controller has the kubernetes/sample-controller shape: informer
// handlers only enqueue a Service key, and syncService converges the
// Endpoints to what the Service and its pods say, however often it runs.
package endpoints

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
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
	// "endpoints-controller").
	Name = "endpoint"
	// component is the source of the controller's events.
	component = "endpoint-controller"

	// maxRetries is how often a Service is retried before it is dropped
	// from the queue (its next change enqueues it again).
	maxRetries = 15
)

// Controller keeps the Endpoints of selector-based Services.
type Controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	logger   *slog.Logger

	serviceLister   corelisters.ServiceLister
	podLister       corelisters.PodLister
	endpointsLister corelisters.EndpointsLister
	cachesSynced    []cache.InformerSynced

	// queue holds Service keys (namespace/name). A Service changed many
	// times while queued is synced once.
	queue workqueue.TypedRateLimitingInterface[string]

	triggerTimes *endpointsliceutil.TriggerTimeTracker
	stale        *staleTracker
}

var _ controllerctx.Controller = (*Controller)(nil)

// Init builds the endpoints controller and registers its handlers on the
// shared Service, Pod and Endpoints informers.
func Init(_ context.Context, c controllerctx.Context) (controllerctx.Controller, error) {
	return newController(c)
}

func newController(c controllerctx.Context) (*Controller, error) {
	if c.Client == nil || c.Informers == nil || c.Recorder == nil {
		return nil, errors.New("endpoint controller: context needs a client, informers and a recorder")
	}
	logger := componentbase.Logger(c.Logger)
	services := c.Informers.Core().V1().Services()
	pods := c.Informers.Core().V1().Pods()
	endpoints := c.Informers.Core().V1().Endpoints()
	e := &Controller{
		client:          c.Client,
		recorder:        c.Recorder(component),
		logger:          logger.With("controller", Name),
		serviceLister:   services.Lister(),
		podLister:       pods.Lister(),
		endpointsLister: endpoints.Lister(),
		queue:           controllerutil.NewQueue[string]("endpoint"),
		triggerTimes:    endpointsliceutil.NewTriggerTimeTracker(),
		stale:           newStaleTracker(),
	}
	var err error
	e.cachesSynced, err = controllerutil.AddEventHandlers(
		controllerutil.EventHandler{Informer: services.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc:    e.enqueueService,
			UpdateFunc: func(_, cur any) { e.enqueueService(cur) },
			DeleteFunc: e.enqueueService,
		}},
		controllerutil.EventHandler{Informer: pods.Informer(), Funcs: cache.ResourceEventHandlerFuncs{AddFunc: e.addPod, UpdateFunc: e.updatePod, DeleteFunc: e.deletePod}},
		// A deleted Endpoints is recreated if its Service still wants it.
		controllerutil.EventHandler{Informer: endpoints.Informer(), Funcs: cache.ResourceEventHandlerFuncs{DeleteFunc: e.enqueueService}},
	)
	if err != nil {
		return nil, fmt.Errorf("endpoint controller: %w", err)
	}
	return e, nil
}

// Name returns upstream's controller name.
func (e *Controller) Name() string { return Name }

// Run syncs Services with the given number of workers until ctx is done.
// A Service whose sync fails is retried with backoff up to maxRetries
// times in a row, as upstream's, then waits for its next change.
func (e *Controller) Run(ctx context.Context, workers int) {
	controllerutil.Loop{
		Logger: e.logger,
		Synced: e.cachesSynced,
		// Endpoints whose Service went away while no controller ran are
		// found once at start; after that, Service deletions are watched.
		Ready: func(context.Context) bool { e.checkLeftoverEndpoints(); return true },
		Queues: []controllerutil.Runnable{&controllerutil.Worker[string]{
			Queue: e.queue, Sync: e.syncService, MaxRetries: maxRetries,
			OnError: func(key string, err error, dropped bool) {
				if !dropped {
					e.logger.Debug("Error syncing endpoints, retrying", "service", key, "err", err)
					return
				}
				e.logger.Info("Dropping service out of the queue", "service", key, "err", err)
				utilruntime.HandleError(err)
			},
		}},
	}.Run(ctx, workers)
}

// enqueueService queues the Service an object (a Service, its Endpoints, or
// a tombstone of either) names.
func (e *Controller) enqueueService(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("couldn't get key for object %+v: %w", obj, err))
		return
	}
	e.queue.Add(key)
}

// addPod queues the Services that select a new pod.
func (e *Controller) addPod(obj any) {
	pod := obj.(*corev1.Pod)
	services, err := endpointsliceutil.ServicesForPod(e.serviceLister, pod.Namespace, pod.Labels)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("unable to get pod %s/%s's service memberships: %w", pod.Namespace, pod.Name, err))
		return
	}
	for key := range services {
		e.queue.Add(key)
	}
}

// updatePod queues the Services that selected the pod before or select it
// now, when the change can show in their endpoints.
func (e *Controller) updatePod(old, cur any) {
	services, err := endpointsliceutil.ServicesToUpdateOnPodChange(e.serviceLister, old.(*corev1.Pod), cur.(*corev1.Pod))
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("unable to get pod service memberships: %w", err))
		return
	}
	for key := range services {
		e.queue.Add(key)
	}
}

// deletePod queues the Services that selected a deleted pod.
func (e *Controller) deletePod(obj any) {
	if pod, ok := controllerutil.DeletedObject[*corev1.Pod](obj); ok {
		e.addPod(pod)
	}
}
