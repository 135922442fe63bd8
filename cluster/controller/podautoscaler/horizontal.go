// Package podautoscaler is klab's horizontal-pod-autoscaler controller,
// after upstream's pkg/controller/podautoscaler: every sync period it reads
// each HorizontalPodAutoscaler's target through the scale subresource,
// reads its pods' usage from the resource metrics API (metrics.k8s.io,
// which the API server fills from the kubelets), computes the replica
// count that brings the usage to the target (replicas.go), holds a scale-in
// back while a higher recommendation lies within the downscale
// stabilization window, bounds the result by minReplicas, maxReplicas and
// the scale-up limit, writes the new scale, and records the status with
// upstream's conditions (AbleToScale, ScalingActive, ScalingLimited) and
// events (SuccessfulRescale).
//
// It acts on Resource metrics (cpu and memory; Utilization and
// AverageValue targets). Other metric types are stored and shown but
// reported as not supported. Without spec.behavior it applies upstream's
// flags (the downscale stabilization window and the scale-up limit
// max(2×current, 4)); with one, its stabilization windows and rate
// policies (behavior.go).
//
// Its timings are upstream's flags divided by the lab's speed (package
// timing), and so are a behavior's windows and periods: at speed 10 an HPA
// is looked at every 1.5 s and scales in once no higher recommendation was
// made in the last 30 s.
//
// Its shape is sample-controller's: handlers only enqueue HPA keys; one
// sync converges one HPA and asks to be run again a sync period later.
package podautoscaler

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
	"github.com/klab-dev/klab/cluster/timing"
)

const (
	// Name is the controller's name in kube-controller-manager.
	Name = "horizontalpodautoscaling"
	// EventSource is the component its events name as their source.
	EventSource = "horizontal-pod-autoscaler"
)

// timestampedRecommendation is one past recommendation, for the
// stabilization window.
type timestampedRecommendation struct {
	replicas  int32
	timestamp time.Time
}

// Controller is the horizontal pod autoscaler.
type Controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	now      func() time.Time

	hpaLister autoscalinglisters.HorizontalPodAutoscalerLister
	podLister corelisters.PodLister
	synced    []cache.InformerSynced

	speed                        timing.Speed
	syncPeriod                   time.Duration
	downscaleStabilisationWindow time.Duration
	calc                         *replicaCalculator

	// recommendations are each HPA's recent recommendations; scaleUpEvents
	// and scaleDownEvents the scalings it made, for spec.behavior's rate
	// policies.
	mu              sync.Mutex
	recommendations map[string][]timestampedRecommendation
	scaleUpEvents   map[string][]timestampedScaleEvent
	scaleDownEvents map[string][]timestampedScaleEvent

	queue  workqueue.TypedRateLimitingInterface[string]
	logger *slog.Logger
}

var _ controllerctx.Controller = (*Controller)(nil)

// Init builds the controller and registers its informer handlers.
func Init(ctx context.Context, c controllerctx.Context) (controllerctx.Controller, error) {
	hpaInformer := c.Informers.Autoscaling().V2().HorizontalPodAutoscalers()
	podInformer := c.Informers.Core().V1().Pods()
	a := &Controller{
		client:                       c.Client,
		recorder:                     c.Recorder(EventSource),
		now:                          time.Now,
		hpaLister:                    hpaInformer.Lister(),
		podLister:                    podInformer.Lister(),
		speed:                        c.Speed,
		syncPeriod:                   c.Speed.Scale(timing.HPASyncPeriod),
		downscaleStabilisationWindow: c.Speed.Scale(timing.HPADownscaleStabilization),
		recommendations:              map[string][]timestampedRecommendation{},
		scaleUpEvents:                map[string][]timestampedScaleEvent{},
		scaleDownEvents:              map[string][]timestampedScaleEvent{},
		queue:                        controllerutil.NewQueue[string](Name),
		logger:                       c.Logger.With("controller", Name),
	}
	a.calc = &replicaCalculator{
		tolerance:                     defaultTolerance,
		cpuInitializationPeriod:       c.Speed.Scale(timing.HPACPUInitializationPeriod),
		delayOfInitialReadinessStatus: c.Speed.Scale(timing.HPAInitialReadinessDelay),
		now:                           func() time.Time { return a.now() },
	}
	var err error
	a.synced, err = controllerutil.AddEventHandlers(
		controllerutil.EventHandler{Informer: hpaInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc:    a.enqueue,
			UpdateFunc: func(_, cur any) { a.enqueue(cur) },
			DeleteFunc: a.forget,
		}},
		controllerutil.EventHandler{Informer: podInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{}},
	)
	if err != nil {
		return nil, fmt.Errorf("horizontal pod autoscaler: %w", err)
	}
	return a, nil
}

// Name returns "horizontalpodautoscaling".
func (a *Controller) Name() string { return Name }

// Run waits for the caches, then runs workers until ctx is done.
func (a *Controller) Run(ctx context.Context, workers int) {
	controllerutil.Loop{
		Logger: a.logger,
		Synced: a.synced,
		Queues: []controllerutil.Runnable{&controllerutil.Worker[string]{
			Queue: a.queue, Sync: a.sync,
			OnError: func(key string, err error, _ bool) {
				a.logger.Info("sync failed, requeuing", "hpa", key, "err", err)
			},
		}},
	}.Run(ctx, workers)
}

// enqueue queues an HPA at once. Its own status writes come back here as
// updates; the queue folds them into the pending key, and the sync period
// between two scalings is kept by the requeue, not by the events.
func (a *Controller) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		a.queue.Add(key)
	}
}

// forget drops a deleted HPA's recommendations.
func (a *Controller) forget(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		a.mu.Lock()
		delete(a.recommendations, key)
		delete(a.scaleUpEvents, key)
		delete(a.scaleDownEvents, key)
		a.mu.Unlock()
	}
}

// sync reconciles one HPA and asks to see it again a sync period later,
// as upstream's queue resyncs every HPA.
func (a *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	hpa, err := a.hpaLister.HorizontalPodAutoscalers(ns).Get(name)
	if err != nil {
		return nil // deleted: forget has dropped it
	}
	if err := a.reconcile(ctx, key, hpa.DeepCopy()); err != nil {
		return err
	}
	return controllerutil.RequeueAfter(a.syncPeriod)
}
