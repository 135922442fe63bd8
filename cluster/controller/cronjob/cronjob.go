// Package cronjob is klab's CronJob controller, after upstream's
// pkg/controller/cronjob (the v2 controller): for each CronJob it works
// out the most recent time its schedule has named that has not been run,
// makes a Job from the jobTemplate for it (named <cronjob>-<minutes since
// the epoch>, so the same time never makes two Jobs), keeps status.active
// and the last schedule and success times, applies the concurrency policy
// (Allow, Forbid, Replace), and deletes finished Jobs beyond the history
// limits. It then asks to look at the CronJob again at its next scheduled
// time, so an idle CronJob costs nothing between runs.
//
// Schedules are parsed by robfig/cron, as upstream parses them. They run
// at wall-clock time: the lab's speed factor does not compress them (a
// lesson uses a schedule such as "*/1 * * * *").
//
// Its shape is sample-controller's: handlers only enqueue CronJob keys and
// one level-triggered sync converges one CronJob.
package cronjob

import (
	"context"
	"fmt"
	"log/slog"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
)

const (
	// Name is the controller's name in kube-controller-manager.
	Name = "cronjob"
	// EventSource is the component its events name as their source.
	EventSource = "cronjob-controller"
)

// controllerKind is what the ControllerRef of a CronJob's Jobs names.
var controllerKind = batchv1.SchemeGroupVersion.WithKind("CronJob")

// Controller is the CronJob controller.
type Controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	// now is the clock; a test sets it.
	now func() metav1.Time

	cronJobLister batchlisters.CronJobLister
	jobLister     batchlisters.JobLister
	synced        []cache.InformerSynced

	// queue holds CronJob keys.
	queue  workqueue.TypedRateLimitingInterface[string]
	logger *slog.Logger
}

var _ controllerctx.Controller = (*Controller)(nil)

// Init builds the controller and registers its informer handlers.
func Init(ctx context.Context, c controllerctx.Context) (controllerctx.Controller, error) {
	return newController(c)
}

func newController(c controllerctx.Context) (*Controller, error) {
	cjInformer := c.Informers.Batch().V1().CronJobs()
	jobInformer := c.Informers.Batch().V1().Jobs()
	jm := &Controller{
		client:        c.Client,
		recorder:      c.Recorder(EventSource),
		now:           metav1.Now,
		cronJobLister: cjInformer.Lister(),
		jobLister:     jobInformer.Lister(),
		queue:         controllerutil.NewQueue[string](Name),
		logger:        c.Logger.With("controller", Name),
	}
	var err error
	jm.synced, err = controllerutil.AddEventHandlers(
		controllerutil.EventHandler{Informer: cjInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc:    jm.enqueue,
			UpdateFunc: func(_, cur any) { jm.enqueue(cur) },
			DeleteFunc: jm.enqueue,
		}},
		controllerutil.EventHandler{Informer: jobInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc:    jm.enqueueOwner,
			UpdateFunc: func(_, cur any) { jm.enqueueOwner(cur) },
			DeleteFunc: jm.enqueueOwner,
		}},
	)
	if err != nil {
		return nil, fmt.Errorf("cronjob controller: %w", err)
	}
	return jm, nil
}

// Name returns "cronjob".
func (jm *Controller) Name() string { return Name }

// Run waits for the caches, then runs workers until ctx is done. A CronJob
// whose sync fails is retried with backoff; one that synced is looked at
// again at its next scheduled time.
func (jm *Controller) Run(ctx context.Context, workers int) {
	controllerutil.Loop{
		Logger: jm.logger,
		Synced: jm.synced,
		Queues: []controllerutil.Runnable{&controllerutil.Worker[string]{
			Queue: jm.queue, Sync: jm.sync,
			OnError: func(key string, err error, _ bool) {
				jm.logger.Info("sync failed, requeuing", "cronJob", key, "err", err)
			},
		}},
	}.Run(ctx, workers)
}

func (jm *Controller) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		jm.queue.Add(key)
	}
}

// enqueueOwner wakes the CronJob that controls a Job: it was made,
// finished, or went away.
func (jm *Controller) enqueueOwner(obj any) {
	job, ok := controllerutil.DeletedObject[*batchv1.Job](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(job)
	if ref == nil || ref.Kind != controllerKind.Kind {
		return
	}
	jm.queue.Add(job.Namespace + "/" + ref.Name)
}
