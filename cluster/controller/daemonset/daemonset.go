// Package daemonset is klab's DaemonSet controller, after upstream's
// pkg/controller/daemon: one pod of the DaemonSet on every node it should
// run on (node selector, required node affinity, taints against
// tolerations), none elsewhere, and its template's updates rolled out
// node by node (RollingUpdate, within maxUnavailable or maxSurge) or left
// to the user (OnDelete).
//
// The controller does not bind pods itself: since Kubernetes 1.12 a
// daemon pod carries a required node affinity for its node's
// metadata.name, and the default scheduler binds it there. It also
// tolerates the node-condition taints (not-ready, unreachable,
// disk/memory/pid pressure, unschedulable) that would keep or evict other
// pods, since a node's daemons must run on it regardless.
//
// Its history is kept as upstream's: a ControllerRevision per distinct
// template, whose controller-revision-hash label is the one its
// up-to-date pods carry (history.go), so `kubectl rollout history` and
// `kubectl rollout undo` work on a DaemonSet.
package daemonset

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
)

const (
	// Name is the controller's name in kube-controller-manager.
	Name = "daemonset"
	// EventSource is the component its events name as their source.
	EventSource = "daemonset-controller"

	// Event reasons, as upstream's.
	SelectingAllReason       = "SelectingAll"
	FailedDaemonPodReason    = "FailedDaemonPod"
	SucceededDaemonPodReason = "SucceededDaemonPod"

	// statusUpdateRetries is how many times a conflicting status update is
	// retried on a fresh read before the key is requeued.
	statusUpdateRetries = 1
	// failedPodsBackoffInitial and failedPodsBackoffMax bound how often a
	// node's failed daemon pod is deleted and recreated (a kubelet that
	// keeps rejecting it must not make the two fight in a hot loop).
	failedPodsBackoffInitial = 1 * time.Second
	failedPodsBackoffMax     = 15 * time.Minute
	// backoffGCInterval is how often stale backoff entries are dropped.
	backoffGCInterval = 1 * time.Minute
)

// controllerKind is what the ControllerRef of a DaemonSet's pods names.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// Controller is the DaemonSet controller.
type Controller struct {
	client     kubernetes.Interface
	podControl controllerutil.PodControl
	recorder   record.EventRecorder

	dsLister      appslisters.DaemonSetLister
	historyLister appslisters.ControllerRevisionLister
	podLister     corelisters.PodLister
	nodeLister    corelisters.NodeLister
	synced        []cache.InformerSynced

	// queue holds DaemonSet keys.
	queue        workqueue.TypedRateLimitingInterface[string]
	expectations *controllerutil.ControllerExpectations
	// failedPodsBackoff spaces out the replacement of failed pods, per
	// DaemonSet, generation and node. Its Clock is the controller's clock
	// (availability is judged by it too).
	failedPodsBackoff *flowcontrol.Backoff
	burstReplicas     int
	backoffGC         time.Duration
	logger            *slog.Logger
}

var _ controllerctx.Controller = (*Controller)(nil)

// Init builds the controller and registers its informer handlers.
func Init(ctx context.Context, c controllerctx.Context) (controllerctx.Controller, error) {
	return newController(c)
}

func newController(c controllerctx.Context) (*Controller, error) {
	dsInformer := c.Informers.Apps().V1().DaemonSets()
	podInformer := c.Informers.Core().V1().Pods()
	nodeInformer := c.Informers.Core().V1().Nodes()
	historyInformer := c.Informers.Apps().V1().ControllerRevisions()
	recorder := c.Recorder(EventSource)
	dsc := &Controller{
		client:            c.Client,
		podControl:        controllerutil.PodControl{Client: c.Client, Recorder: recorder},
		recorder:          recorder,
		dsLister:          dsInformer.Lister(),
		historyLister:     historyInformer.Lister(),
		podLister:         podInformer.Lister(),
		nodeLister:        nodeInformer.Lister(),
		queue:             controllerutil.NewQueue[string](Name),
		expectations:      controllerutil.NewControllerExpectations(c.Speed.Scale(controllerutil.ExpectationsTimeout)),
		failedPodsBackoff: flowcontrol.NewBackOff(c.Speed.Scale(failedPodsBackoffInitial), c.Speed.Scale(failedPodsBackoffMax)),
		burstReplicas:     controllerutil.BurstReplicas,
		backoffGC:         c.Speed.Scale(backoffGCInterval),
		logger:            c.Logger.With("controller", Name),
	}
	var err error
	dsc.synced, err = controllerutil.AddEventHandlers(
		controllerutil.EventHandler{Informer: dsInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{AddFunc: dsc.addDaemonSet, UpdateFunc: dsc.updateDaemonSet, DeleteFunc: dsc.deleteDaemonSet}},
		controllerutil.EventHandler{Informer: historyInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{AddFunc: dsc.addHistory, UpdateFunc: dsc.updateHistory, DeleteFunc: dsc.deleteHistory}},
		controllerutil.EventHandler{Informer: podInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{AddFunc: dsc.addPod, UpdateFunc: dsc.updatePod, DeleteFunc: dsc.deletePod}},
		controllerutil.EventHandler{Informer: nodeInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{AddFunc: dsc.addNode, UpdateFunc: dsc.updateNode, DeleteFunc: dsc.deleteNode}},
	)
	if err != nil {
		return nil, fmt.Errorf("daemonset controller: %w", err)
	}
	return dsc, nil
}

// Name returns "daemonset".
func (dsc *Controller) Name() string { return Name }

// Run waits for the caches, then runs workers until ctx is done, and
// drops stale failed-pod backoffs meanwhile. A DaemonSet whose sync fails
// is retried with backoff for as long as it exists, as upstream's.
func (dsc *Controller) Run(ctx context.Context, workers int) {
	var gc sync.WaitGroup
	gc.Go(func() { wait.Until(dsc.failedPodsBackoff.GC, dsc.backoffGC, ctx.Done()) })
	defer gc.Wait()
	controllerutil.Loop{
		Logger: dsc.logger,
		Synced: dsc.synced,
		Queues: []controllerutil.Runnable{&controllerutil.Worker[string]{
			Queue: dsc.queue, Sync: dsc.syncDaemonSet,
			OnError: func(key string, err error, _ bool) {
				dsc.logger.Info("sync failed, requeuing", "daemonSet", key, "err", err)
			},
		}},
	}.Run(ctx, workers)
}
