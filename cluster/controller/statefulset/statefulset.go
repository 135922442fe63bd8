// Package statefulset is klab's StatefulSet controller, after upstream's
// pkg/controller/statefulset: each Pod of a StatefulSet has a stable
// identity, its ordinal (web-0, web-1, ...), its hostname and, through the
// set's headless Service, its DNS name. With the default OrderedReady
// policy Pods are created one at a time from ordinal 0 up, each only once
// every lower one is Running, Ready and Available (Ready for
// spec.minReadySeconds, which status.availableReplicas counts), and
// removed one at a time from the
// highest ordinal down; with Parallel they are created and removed at once.
//
// Its shape is sample-controller's: informer handlers only enqueue keys and
// one level-triggered sync converges one StatefulSet. Unlike the ReplicaSet
// controller it needs no expectations: a Pod's name is its identity, so a
// sync that runs before the informer shows a create tries the same name
// again and is told it exists.
//
// A changed template is rolled out through ControllerRevisions
// (revisions.go): with RollingUpdate, Pods are replaced one at a time from
// the highest ordinal down, each once the one above it is Running, Ready
// and Available again, and the ordinals below spec.updateStrategy.rollingUpdate.
// partition keep the old revision; with OnDelete a Pod takes the new
// template only when someone deletes it. `kubectl rollout history`,
// `rollout undo` and `rollout status` read and write that history.
//
// Not built: volumeClaimTemplates' claims (klab serves no
// PersistentVolumeClaims) and adoption of orphan Pods.
package statefulset

import (
	"context"
	"fmt"
	"log/slog"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
	"github.com/klab-dev/klab/cluster/controller/internal/history"
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
	// revisions stores the sets' ControllerRevisions and lists them
	// from the cache.
	revisions history.Client
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
	revisionInformer := c.Informers.Apps().V1().ControllerRevisions()
	ssc := &Controller{
		client:    c.Client,
		recorder:  c.Recorder(EventSource),
		setLister: setInformer.Lister(),
		podLister: podInformer.Lister(),
		revisions: history.Client{Client: c.Client, Lister: revisionInformer.Lister()},
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
		// Revisions are only read from the cache, as upstream's: the
		// set's own events and its Pods' drive the syncs.
		controllerutil.EventHandler{Informer: revisionInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{}},
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
	if ref == nil {
		// An orphan (its set was deleted with --cascade=orphan, or the
		// Pod was made by hand): every set that would adopt it looks,
		// as upstream's getPodStatefulSets. A deleted orphan concerns
		// no one.
		if pod.DeletionTimestamp != nil {
			return
		}
		if _, gone := obj.(cache.DeletedFinalStateUnknown); gone {
			return
		}
		sets, err := ssc.setLister.StatefulSets(pod.Namespace).List(labels.Everything())
		if err != nil {
			return
		}
		for _, set := range sets {
			selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
			if err != nil || selector.Empty() || !selector.Matches(labels.Set(pod.Labels)) {
				continue
			}
			if _, ok := ordinalOf(set, pod); ok {
				ssc.enqueue(set)
			}
		}
		return
	}
	if ref.Kind != controllerKind.Kind {
		return
	}
	ssc.queue.Add(pod.Namespace + "/" + ref.Name)
}
