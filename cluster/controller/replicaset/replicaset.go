// Package replicaset is klab's ReplicaSet controller, after upstream's
// pkg/controller/replicaset: it keeps spec.replicas pods running from a
// ReplicaSet's template, adopting matching orphans and releasing pods that
// no longer match, and reports what it sees in the ReplicaSet's status.
//
// Its shape is sample-controller's: informer handlers only enqueue keys
// ("namespace/name"), and one level-triggered sync converges one
// ReplicaSet. Expectations keep a sync from creating or deleting again
// before the informer has shown it its previous creates and deletes.
package replicaset

import (
	"context"
	"fmt"
	"log/slog"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
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
	Name = "replicaset"
	// EventSource is the component its events name as their source.
	EventSource = "replicaset-controller"
	// statusUpdateRetries is how many times a conflicting status update is
	// retried on a fresh read before the key is requeued.
	statusUpdateRetries = 1
)

// controllerKind is what the ControllerRef of a ReplicaSet's pods names.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// Controller is the ReplicaSet controller.
type Controller struct {
	name       string
	client     kubernetes.Interface
	podControl controllerutil.PodControl
	recorder   record.EventRecorder

	// sets reads and writes the managed objects: ReplicaSets, or
	// ReplicationControllers seen as ReplicaSets.
	sets      Adapter
	kind      schema.GroupVersionKind
	podLister corelisters.PodLister
	synced    []cache.InformerSynced

	// queue holds ReplicaSet keys.
	queue        workqueue.TypedRateLimitingInterface[string]
	expectations *controllerutil.UIDTrackingControllerExpectations
	// burstReplicas caps the creates or deletes of one sync.
	burstReplicas int
	clock         clock.PassiveClock
	logger        *slog.Logger
}

var _ controllerctx.Controller = (*Controller)(nil)

// Init builds the controller and registers its informer handlers.
func Init(ctx context.Context, c controllerctx.Context) (controllerctx.Controller, error) {
	return newController(c)
}

func newController(c controllerctx.Context) (*Controller, error) {
	rsInformer := c.Informers.Apps().V1().ReplicaSets()
	sets := replicaSets{informer: rsInformer, lister: rsInformer.Lister(), client: c.Client}
	return NewBase(c, Name, EventSource, sets)
}

// NewBase builds a controller that keeps the replicas of the objects sets
// adapts, naming itself name (its queue, logs) and eventSource (its
// events). The ReplicaSet controller is NewBase over ReplicaSets; the
// replication manager is NewBase over ReplicationControllers.
func NewBase(c controllerctx.Context, name, eventSource string, sets Adapter) (*Controller, error) {
	podInformer := c.Informers.Core().V1().Pods()
	recorder := c.Recorder(eventSource)
	rsc := &Controller{
		name:          name,
		client:        c.Client,
		podControl:    controllerutil.PodControl{Client: c.Client, Recorder: recorder},
		recorder:      recorder,
		sets:          sets,
		kind:          sets.Kind(),
		podLister:     podInformer.Lister(),
		queue:         controllerutil.NewQueue[string](name),
		expectations:  controllerutil.NewUIDTrackingControllerExpectations(c.Speed.Scale(controllerutil.ExpectationsTimeout)),
		burstReplicas: controllerutil.BurstReplicas,
		clock:         clock.RealClock{},
		logger:        c.Logger.With("controller", name),
	}
	var err error
	rsc.synced, err = controllerutil.AddEventHandlers(
		controllerutil.EventHandler{Informer: sets.Informer(), Funcs: cache.ResourceEventHandlerFuncs{AddFunc: rsc.addReplicaSet, UpdateFunc: rsc.updateReplicaSet, DeleteFunc: rsc.deleteReplicaSet}},
		controllerutil.EventHandler{Informer: podInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{AddFunc: rsc.addPod, UpdateFunc: rsc.updatePod, DeleteFunc: rsc.deletePod}},
	)
	if err != nil {
		return nil, fmt.Errorf("%s controller: %w", name, err)
	}
	return rsc, nil
}

// Name returns the controller's name: "replicaset", or the name the
// caller of NewBase gave it.
func (rsc *Controller) Name() string { return rsc.name }

// Run waits for the caches, then runs workers until ctx is done. A
// ReplicaSet whose sync fails is retried with backoff for as long as it
// exists, as upstream's.
func (rsc *Controller) Run(ctx context.Context, workers int) {
	controllerutil.Loop{
		Logger: rsc.logger,
		Synced: rsc.synced,
		Queues: []controllerutil.Runnable{&controllerutil.Worker[string]{
			Queue: rsc.queue, Sync: rsc.sync,
			OnError: func(key string, err error, _ bool) {
				rsc.logger.Info("sync failed, requeuing", "replicaSet", key, "err", err)
			},
		}},
	}.Run(ctx, workers)
}
