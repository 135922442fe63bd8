// Package job is klab's Job controller, after upstream's
// pkg/controller/job: it runs a Job's pods until enough of them succeeded
// (completions) with at most parallelism at a time, replaces failed ones
// after an exponential backoff, and gives up after backoffLimit failures
// or activeDeadlineSeconds.
//
// Finished pods are counted with the batch.kubernetes.io/job-tracking
// finalizer, as upstream has done since 1.26: every pod is created with
// it, so it cannot disappear (garbage collection, eviction) before the
// controller counted it. A finished pod's UID first goes into
// status.uncountedTerminatedPods, then its finalizer is removed, then it
// moves into the succeeded or failed counter. A Job ends in two steps too:
// SuccessCriteriaMet or FailureTarget first, Complete or Failed once no
// pod of it is left running or uncounted.
package job

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
)

const (
	// Name is the controller's name in kube-controller-manager.
	Name = "job"
	// EventSource is the component its events name as their source.
	EventSource = "job-controller"

	// MaxUncountedPods caps status.uncountedTerminatedPods (a sync stops
	// counting there, keeping the status small).
	MaxUncountedPods = 500
	// MaxPodCreateDeletePerSync caps the creates or deletes of one sync.
	MaxPodCreateDeletePerSync = 500
	// syncJobBatchPeriod gathers the pod events of a Job into one sync.
	syncJobBatchPeriod = time.Second
)

// controllerKind is what the ControllerRef of a Job's pods names.
var controllerKind = batchv1.SchemeGroupVersion.WithKind("Job")

// Controller is the Job controller.
type Controller struct {
	client     kubernetes.Interface
	podControl controllerutil.PodControl
	recorder   record.EventRecorder

	jobLister batchlisters.JobLister
	podLister corelisters.PodLister
	synced    []cache.InformerSynced

	// queue holds Job keys; orphanQueue the keys of pods that carry the
	// tracking finalizer but no longer belong to an unfinished Job.
	queue       workqueue.TypedRateLimitingInterface[string]
	orphanQueue workqueue.TypedRateLimitingInterface[string]

	expectations          *controllerutil.ControllerExpectations
	finalizerExpectations *uidTrackingExpectations
	backoffStore          *backoffStore

	// Timings scaled by the cluster's speed.
	podFailureBackoff, maxPodFailureBackoff, batchPeriod time.Duration

	clock  clock.PassiveClock
	logger *slog.Logger
}

var _ controllerctx.Controller = (*Controller)(nil)

// Init builds the controller and registers its informer handlers.
func Init(ctx context.Context, c controllerctx.Context) (controllerctx.Controller, error) {
	return newController(c)
}

func newController(c controllerctx.Context) (*Controller, error) {
	jobInformer := c.Informers.Batch().V1().Jobs()
	podInformer := c.Informers.Core().V1().Pods()
	recorder := c.Recorder(EventSource)
	jm := &Controller{
		client:                c.Client,
		podControl:            controllerutil.PodControl{Client: c.Client, Recorder: recorder},
		recorder:              recorder,
		jobLister:             jobInformer.Lister(),
		podLister:             podInformer.Lister(),
		queue:                 controllerutil.NewQueue[string](Name),
		orphanQueue:           controllerutil.NewQueue[string](Name + "_orphan_pod"),
		expectations:          controllerutil.NewControllerExpectations(c.Speed.Scale(controllerutil.ExpectationsTimeout)),
		finalizerExpectations: newUIDTrackingExpectations(),
		backoffStore:          newBackoffStore(),
		podFailureBackoff:     c.Speed.Scale(DefaultJobPodFailureBackOff),
		maxPodFailureBackoff:  c.Speed.Scale(MaxJobPodFailureBackOff),
		batchPeriod:           c.Speed.Scale(syncJobBatchPeriod),
		clock:                 clock.RealClock{},
		logger:                c.Logger.With("controller", Name),
	}
	var err error
	jm.synced, err = controllerutil.AddEventHandlers(
		controllerutil.EventHandler{Informer: jobInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{AddFunc: jm.addJob, UpdateFunc: jm.updateJob, DeleteFunc: jm.deleteJob}},
		controllerutil.EventHandler{Informer: podInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: jm.addPod, UpdateFunc: jm.updatePod,
			DeleteFunc: func(obj any) { jm.deletePod(obj, true) },
		}},
	)
	if err != nil {
		return nil, fmt.Errorf("job controller: %w", err)
	}
	return jm, nil
}

// Name returns "job".
func (jm *Controller) Name() string { return Name }

// Run waits for the caches, then runs workers on both queues until ctx is
// done. A Job, or an orphan pod, whose sync fails is retried with backoff
// for as long as it exists, as upstream's.
func (jm *Controller) Run(ctx context.Context, workers int) {
	onError := func(key string, err error, _ bool) { jm.logger.Info("sync failed, requeuing", "key", key, "err", err) }
	controllerutil.Loop{
		Logger: jm.logger,
		Synced: jm.synced,
		Queues: []controllerutil.Runnable{
			&controllerutil.Worker[string]{Queue: jm.queue, Sync: jm.syncJob, OnError: onError},
			&controllerutil.Worker[string]{Queue: jm.orphanQueue, Sync: jm.syncOrphanPod, OnError: onError},
		},
	}.Run(ctx, workers)
}
