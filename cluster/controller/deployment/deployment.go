// Package deployment is klab's Deployment controller, after upstream's
// pkg/controller/deployment. A Deployment runs its pods through
// ReplicaSets named <deployment>-<pod-template-hash>: the one whose
// template matches the Deployment's is the new ReplicaSet, all others are
// old. A rollout (RollingUpdate within maxSurge and maxUnavailable, or
// Recreate) scales the new one up and the old ones down; scaling the
// Deployment in the middle of a rollout spreads the change over all of
// them in proportion. Revisions number the rollouts in annotations, which
// `kubectl rollout history` and `kubectl rollout undo` read; an undo
// brings back an old template, and the controller then reuses that old
// ReplicaSet under the next revision number.
//
// The status reports the counts of all ReplicaSets together, and the
// Available and Progressing conditions that `kubectl rollout status`
// waits on.
package deployment

import (
	"context"
	"fmt"
	"log/slog"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
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
	Name = "deployment"
	// EventSource is the component its events name as their source.
	EventSource = "deployment-controller"
	// maxRetries is how many times a failing Deployment is retried before
	// it waits for the next change (upstream's 15: 5 ms doubling to ~82 s).
	maxRetries = 15
)

// controllerKind is what the ControllerRef of a Deployment's ReplicaSets
// names.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("Deployment")

// Controller is the Deployment controller.
type Controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder

	dLister   appslisters.DeploymentLister
	rsLister  appslisters.ReplicaSetLister
	podLister corelisters.PodLister
	synced    []cache.InformerSynced

	// queue holds Deployment keys.
	queue  workqueue.TypedRateLimitingInterface[string]
	clock  clock.PassiveClock
	logger *slog.Logger
}

var _ controllerctx.Controller = (*Controller)(nil)

// Init builds the controller and registers its informer handlers.
func Init(ctx context.Context, c controllerctx.Context) (controllerctx.Controller, error) {
	return newController(c)
}

func newController(c controllerctx.Context) (*Controller, error) {
	dInformer := c.Informers.Apps().V1().Deployments()
	rsInformer := c.Informers.Apps().V1().ReplicaSets()
	podInformer := c.Informers.Core().V1().Pods()
	dc := &Controller{
		client:    c.Client,
		recorder:  c.Recorder(EventSource),
		dLister:   dInformer.Lister(),
		rsLister:  rsInformer.Lister(),
		podLister: podInformer.Lister(),
		queue:     controllerutil.NewQueue[string](Name),
		clock:     clock.RealClock{},
		logger:    c.Logger.With("controller", Name),
	}
	var err error
	dc.synced, err = controllerutil.AddEventHandlers(
		controllerutil.EventHandler{Informer: dInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{AddFunc: dc.addDeployment, UpdateFunc: dc.updateDeployment, DeleteFunc: dc.deleteDeployment}},
		controllerutil.EventHandler{Informer: rsInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{AddFunc: dc.addReplicaSet, UpdateFunc: dc.updateReplicaSet, DeleteFunc: dc.deleteReplicaSet}},
		controllerutil.EventHandler{Informer: podInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{DeleteFunc: dc.deletePod}},
	)
	if err != nil {
		return nil, fmt.Errorf("deployment controller: %w", err)
	}
	return dc, nil
}

// Name returns "deployment".
func (dc *Controller) Name() string { return Name }

// Run waits for the caches, then runs workers until ctx is done. A
// Deployment whose sync fails is retried with backoff up to maxRetries
// times in a row, as upstream's, then waits for its next change.
func (dc *Controller) Run(ctx context.Context, workers int) {
	controllerutil.Loop{
		Logger: dc.logger,
		Synced: dc.synced,
		Queues: []controllerutil.Runnable{&controllerutil.Worker[string]{
			Queue: dc.queue, Sync: dc.syncDeployment, MaxRetries: maxRetries,
			OnError: func(key string, err error, dropped bool) {
				if dropped {
					dc.logger.Info("dropping deployment out of the queue", "deployment", key, "err", err)
					return
				}
				dc.logger.Info("error syncing deployment, requeuing", "deployment", key, "err", err)
			},
		}},
	}.Run(ctx, workers)
}
