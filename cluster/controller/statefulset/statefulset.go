// Package statefulset is klab's StatefulSet controller, after upstream's
// pkg/controller/statefulset: each Pod of a StatefulSet has a stable
// identity, its ordinal (web-0, web-1, ...), its hostname and, through the
// set's headless Service, its DNS name. With the default OrderedReady
// policy Pods are created one at a time from ordinal 0 up, each only once
// every lower one is Running and Ready, and removed one at a time from the
// highest ordinal down; with Parallel they are created and removed at once.
//
// Its shape is sample-controller's: informer handlers only enqueue keys and
// one level-triggered sync converges one StatefulSet. Unlike the ReplicaSet
// controller it needs no expectations: a Pod's name is its identity, so a
// sync that runs before the informer shows a create tries the same name
// again and is told it exists.
//
// Not built yet: rolling updates through ControllerRevisions (a changed
// template leaves the running Pods as they are), volumeClaimTemplates'
// claims (klab serves no PersistentVolumeClaims), adoption of orphans and
// minReadySeconds.
package statefulset

import (
	"context"
	"fmt"
	"log/slog"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
)

const (
	// Name is the controller's name in kube-controller-manager.
	Name = "statefulset"
	// EventSource is the component its events name as their source.
	EventSource = "statefulset-controller"
)

// controllerKind is what the ControllerRef of a StatefulSet's Pods names.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

// Controller is the StatefulSet controller.
type Controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder

	setLister appslisters.StatefulSetLister
	podLister corelisters.PodLister
	synced    []cache.InformerSynced

	// queue holds StatefulSet keys.
	queue  workqueue.TypedRateLimitingInterface[string]
	logger *slog.Logger
}

var _ controllerctx.Controller = (*Controller)(nil)

// Init builds the controller and registers its informer handlers.
func Init(ctx context.Context, c controllerctx.Context) (controllerctx.Controller, error) {
	return newController(c)
}

func newController(c controllerctx.Context) (*Controller, error) {
	setInformer := c.Informers.Apps().V1().StatefulSets()
	podInformer := c.Informers.Core().V1().Pods()
	ssc := &Controller{
		client:    c.Client,
		recorder:  c.Recorder(EventSource),
		setLister: setInformer.Lister(),
		podLister: podInformer.Lister(),
		queue:     controllerutil.NewQueue[string](Name),
		logger:    c.Logger.With("controller", Name),
	}
	var err error
	ssc.synced, err = controllerutil.AddEventHandlers(
		controllerutil.EventHandler{Informer: setInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc:    ssc.enqueue,
			UpdateFunc: func(_, cur any) { ssc.enqueue(cur) },
			DeleteFunc: ssc.enqueue,
		}},
		controllerutil.EventHandler{Informer: podInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc:    ssc.enqueueOwner,
			UpdateFunc: func(_, cur any) { ssc.enqueueOwner(cur) },
			DeleteFunc: ssc.enqueueOwner,
		}},
	)
	if err != nil {
		return nil, fmt.Errorf("statefulset controller: %w", err)
	}
	return ssc, nil
}

// Name returns "statefulset".
func (ssc *Controller) Name() string { return Name }

// Run waits for the caches, then runs workers until ctx is done. A
// StatefulSet whose sync fails is retried with backoff.
func (ssc *Controller) Run(ctx context.Context, workers int) {
	controllerutil.Loop{
		Logger: ssc.logger,
		Synced: ssc.synced,
		Queues: []controllerutil.Runnable{&controllerutil.Worker[string]{
			Queue: ssc.queue, Sync: ssc.sync,
			OnError: func(key string, err error, _ bool) {
				ssc.logger.Info("sync failed, requeuing", "statefulSet", key, "err", err)
			},
		}},
	}.Run(ctx, workers)
}

// The handlers only decide which StatefulSet to sync.

func (ssc *Controller) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		ssc.queue.Add(key)
	}
}

// enqueueOwner wakes the StatefulSet that controls a Pod: its Pod was
// created, became ready, or went away.
func (ssc *Controller) enqueueOwner(obj any) {
	pod, ok := controllerutil.DeletedObject[*corev1.Pod](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != controllerKind.Kind {
		return
	}
	ssc.queue.Add(pod.Namespace + "/" + ref.Name)
}
