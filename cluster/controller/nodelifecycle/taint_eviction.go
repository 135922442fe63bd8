package nodelifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/timing"
)

// TaintEvictionName is the taint eviction controller's name in the
// controller manager and the source of its events.
const TaintEvictionName = "taint-eviction-controller"

// deletionRetries is how often a failed pod deletion is retried before the
// controller waits for the next update of the pod or its node.
const deletionRetries = 5

// TaintEvictionController deletes pods from nodes with NoExecute taints
// they do not tolerate, at once or when their tolerationSeconds run out.
type TaintEvictionController struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	logger   *slog.Logger
	clock    clock.WithDelayedExecution
	speed    timing.Speed
	observe  func(Transition)

	podLister  corelisters.PodLister
	podIndexer cache.Indexer
	nodeLister corelisters.NodeLister
	synced     []cache.InformerSynced

	// taintedNodes holds the NoExecute taints of every node that has some.
	taintedNodesLock sync.Mutex
	taintedNodes     map[string][]v1.Taint

	// updates holds nodes whose taints and pods whose tolerations or node
	// changed; deletions the pods whose eviction is due.
	updates        workqueue.TypedRateLimitingInterface[updateItem]
	deletions      workqueue.TypedRateLimitingInterface[string]
	updateWorker   *controllerutil.Worker[updateItem]
	deletionWorker *controllerutil.Worker[string]
	schedule       *evictionSchedule
}

// updateItem is a node (pod fields empty) or a pod to look at again.
type updateItem struct {
	nodeName     string
	podNamespace string
	podName      string
}

// InitTaintEviction builds the taint eviction controller from the
// manager's context.
func InitTaintEviction(ctx context.Context, c controllerctx.Context) (controllerctx.Controller, error) {
	return newTaintEvictionController(ctx, c.Client, c.Informers.Core().V1().Pods(), c.Informers.Core().V1().Nodes(),
		c.Recorder(TaintEvictionName), c.Logger, c.Speed, clock.RealClock{})
}

func newTaintEvictionController(ctx context.Context, client kubernetes.Interface, pods coreinformers.PodInformer, nodes coreinformers.NodeInformer,
	recorder record.EventRecorder, logger *slog.Logger, speed timing.Speed, clk clock.WithDelayedExecution) (*TaintEvictionController, error) {
	logger = componentbase.Logger(logger)
	tc := &TaintEvictionController{
		client:       client,
		recorder:     recorder,
		logger:       logger.With("controller", TaintEvictionName),
		clock:        clk,
		speed:        speed,
		observe:      observerFrom(ctx),
		podLister:    pods.Lister(),
		podIndexer:   pods.Informer().GetIndexer(),
		nodeLister:   nodes.Lister(),
		taintedNodes: map[string][]v1.Taint{},
		updates:      controllerutil.NewQueue[updateItem]("noexec_taint"),
		deletions:    controllerutil.NewQueue[string]("noexec_taint_evictions"),
	}
	tc.updateWorker = &controllerutil.Worker[updateItem]{Queue: tc.updates, Sync: tc.syncUpdate}
	tc.deletionWorker = &controllerutil.Worker[string]{
		Queue: tc.deletions, Sync: tc.syncDeletion, MaxRetries: deletionRetries,
		OnError: func(key string, err error, dropped bool) {
			if dropped {
				tc.logger.Error("Failed to delete pod", "pod", key, "err", err)
				tc.schedule.finish(key, false)
			}
		},
	}
	tc.schedule = newEvictionSchedule(clk, func(key string) { tc.deletions.Add(key) })
	if err := addPodNodeNameIndexer(pods.Informer()); err != nil {
		return nil, fmt.Errorf("index pods by node: %w", err)
	}
	var err error
	tc.synced, err = controllerutil.AddEventHandlers(
		controllerutil.EventHandler{Informer: pods.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { tc.podUpdated(nil, obj.(*v1.Pod)) },
			UpdateFunc: func(old, obj interface{}) { tc.podUpdated(old.(*v1.Pod), obj.(*v1.Pod)) },
			DeleteFunc: func(obj interface{}) {
				if pod, ok := controllerutil.DeletedObject[*v1.Pod](obj); ok {
					tc.podUpdated(pod, nil)
				}
			},
		}},
		controllerutil.EventHandler{Informer: nodes.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { tc.nodeUpdated(nil, obj.(*v1.Node)) },
			UpdateFunc: func(old, obj interface{}) { tc.nodeUpdated(old.(*v1.Node), obj.(*v1.Node)) },
			DeleteFunc: func(obj interface{}) {
				if node, ok := controllerutil.DeletedObject[*v1.Node](obj); ok {
					tc.nodeUpdated(node, nil)
				}
			},
		}},
	)
	if err != nil {
		return nil, fmt.Errorf("taint eviction controller: %w", err)
	}
	return tc, nil
}

// Name returns "taint-eviction-controller".
func (tc *TaintEvictionController) Name() string { return TaintEvictionName }

// QueueLen is how many updates wait plus how many evictions are pending.
func (tc *TaintEvictionController) QueueLen() int {
	return tc.updates.Len() + tc.deletions.Len() + tc.schedule.len()
}

// SyncCounts returns how many updates and deletions were handled and how
// many deletions failed.
func (tc *TaintEvictionController) SyncCounts() (syncs, failures uint64) {
	updates, _ := tc.updateWorker.SyncCounts()
	deletions, failed := tc.deletionWorker.SyncCounts()
	return updates + deletions, failed
}

// Run works the update and deletion queues with the given number of
// workers each until ctx is done, and returns once they have stopped.
func (tc *TaintEvictionController) Run(ctx context.Context, workers int) {
	controllerutil.Loop{
		Logger: tc.logger,
		Synced: tc.synced,
		Queues: []controllerutil.Runnable{tc.updateWorker, tc.deletionWorker},
	}.Run(ctx, workers)
}

// syncUpdate looks again at the evictions of a node, or of a pod.
func (tc *TaintEvictionController) syncUpdate(ctx context.Context, item updateItem) error {
	if item.podName == "" {
		tc.handleNodeUpdate(ctx, item.nodeName)
	} else {
		tc.handlePodUpdate(ctx, item)
	}
	return nil
}

// syncDeletion carries out one due eviction. A failed deletion is retried
// with backoff deletionRetries times, then given up until the pod or its
// node changes again.
func (tc *TaintEvictionController) syncDeletion(ctx context.Context, key string) error {
	err := tc.evict(ctx, key)
	if err == nil {
		tc.schedule.finish(key, true)
	}
	return err
}

// podUpdated queues a pod whose tolerations or node changed.
func (tc *TaintEvictionController) podUpdated(oldPod, newPod *v1.Pod) {
	var item updateItem
	var oldTolerations, newTolerations []v1.Toleration
	if oldPod != nil {
		item = updateItem{nodeName: oldPod.Spec.NodeName, podNamespace: oldPod.Namespace, podName: oldPod.Name}
		oldTolerations = oldPod.Spec.Tolerations
	}
	if newPod != nil {
		item = updateItem{nodeName: newPod.Spec.NodeName, podNamespace: newPod.Namespace, podName: newPod.Name}
		newTolerations = newPod.Spec.Tolerations
	}
	if oldPod != nil && newPod != nil && apiequality.Semantic.DeepEqual(oldTolerations, newTolerations) && oldPod.Spec.NodeName == newPod.Spec.NodeName {
		return
	}
	tc.updates.Add(item)
}

// nodeUpdated queues a node whose NoExecute taints changed.
func (tc *TaintEvictionController) nodeUpdated(oldNode, newNode *v1.Node) {
	var name string
	var oldTaints, newTaints []v1.Taint
	if oldNode != nil {
		name, oldTaints = oldNode.Name, noExecuteTaints(oldNode.Spec.Taints)
	}
	if newNode != nil {
		name, newTaints = newNode.Name, noExecuteTaints(newNode.Spec.Taints)
	}
	if oldNode != nil && newNode != nil && apiequality.Semantic.DeepEqual(oldTaints, newTaints) {
		return
	}
	tc.updates.Add(updateItem{nodeName: name})
}

func noExecuteTaints(taints []v1.Taint) []v1.Taint {
	var out []v1.Taint
	for _, t := range taints {
		if t.Effect == v1.TaintEffectNoExecute {
			out = append(out, t)
		}
	}
	return out
}

// handleNodeUpdate records the node's NoExecute taints and reconsiders
// each of its pods.
func (tc *TaintEvictionController) handleNodeUpdate(ctx context.Context, nodeName string) {
	node, err := tc.nodeLister.Get(nodeName)
	if apierrors.IsNotFound(err) {
		tc.taintedNodesLock.Lock()
		delete(tc.taintedNodes, nodeName)
		tc.taintedNodesLock.Unlock()
		return
	}
	if err != nil {
		tc.logger.Error("Cannot get node", "node", nodeName, "err", err)
		return
	}
	taints := noExecuteTaints(node.Spec.Taints)
	tc.taintedNodesLock.Lock()
	if len(taints) == 0 {
		delete(tc.taintedNodes, nodeName)
	} else {
		tc.taintedNodes[nodeName] = taints
	}
	tc.taintedNodesLock.Unlock()

	// taintedNodes is set before the pods are listed: a pod the cache
	// delivers later is handled by its own update, which reads the taints
	// set here.
	pods, err := podsByNode(tc.podIndexer, nodeName)
	if err != nil {
		tc.logger.Error("Failed to get pods assigned to node", "node", nodeName, "err", err)
		return
	}
	if len(taints) == 0 {
		for _, pod := range pods {
			tc.cancelWorkWithEvent(nodeName, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
		}
		return
	}
	now := tc.clock.Now()
	for _, pod := range pods {
		tc.processPodOnNode(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, nodeName, pod.Spec.Tolerations, taints, now)
	}
}

// handlePodUpdate reconsiders one pod against its node's taints.
func (tc *TaintEvictionController) handlePodUpdate(ctx context.Context, item updateItem) {
	name := types.NamespacedName{Namespace: item.podNamespace, Name: item.podName}
	pod, err := tc.podLister.Pods(item.podNamespace).Get(item.podName)
	if apierrors.IsNotFound(err) {
		tc.cancelWorkWithEvent(item.nodeName, name)
		return
	}
	if err != nil {
		tc.logger.Error("Could not get pod", "pod", name.String(), "err", err)
		return
	}
	if pod.Spec.NodeName != item.nodeName || pod.Spec.NodeName == "" {
		return // a later update of the pod carries its current node
	}
	tc.taintedNodesLock.Lock()
	taints, ok := tc.taintedNodes[pod.Spec.NodeName]
	tc.taintedNodesLock.Unlock()
	if !ok {
		return
	}
	tc.processPodOnNode(name, pod.Spec.NodeName, pod.Spec.Tolerations, taints, tc.clock.Now())
}

// processPodOnNode decides a pod's fate on a node with the given NoExecute
// taints: deleted now if a taint is not tolerated, deleted after the
// shortest tolerationSeconds of the tolerations used (divided by the lab's
// speed, counted from when this controller first saw the taint), or left
// alone if they tolerate it forever.
func (tc *TaintEvictionController) processPodOnNode(pod types.NamespacedName, nodeName string, tolerations []v1.Toleration, taints []v1.Taint, now time.Time) {
	if len(taints) == 0 {
		tc.cancelWorkWithEvent(nodeName, pod)
		return
	}
	allTolerated, used := matchingTolerations(taints, tolerations)
	if !allTolerated {
		tc.logger.Info("Not all taints are tolerated after update for pod on node", "pod", pod.String(), "node", nodeName)
		tc.cancelWorkWithEvent(nodeName, pod)
		tc.scheduleEviction(pod, nodeName, now, now)
		return
	}
	minToleration := minTolerationTime(used)
	if minToleration < 0 {
		// Tolerated forever: call off any deletion.
		tc.cancelWorkWithEvent(nodeName, pod)
		return
	}
	startTime := now
	triggerTime := startTime.Add(tc.speed.Scale(minToleration))
	if createdAt, pending := tc.schedule.get(pod.String()); pending {
		startTime = createdAt
		if startTime.Add(tc.speed.Scale(minToleration)).Before(triggerTime) {
			return // already due sooner
		}
		tc.cancelWorkWithEvent(nodeName, pod)
	}
	tc.scheduleEviction(pod, nodeName, startTime, triggerTime)
}

func (tc *TaintEvictionController) scheduleEviction(pod types.NamespacedName, nodeName string, createdAt, fireAt time.Time) {
	if tc.schedule.add(pod.String(), createdAt, fireAt) {
		tc.observe(Transition{Kind: TransitionEvictionScheduled, Node: nodeName, Pod: pod.String(), At: fireAt})
	}
}

// cancelWorkWithEvent calls off a pending deletion and says so in an event.
func (tc *TaintEvictionController) cancelWorkWithEvent(nodeName string, pod types.NamespacedName) {
	if !tc.schedule.cancel(pod.String()) {
		return
	}
	tc.recorder.Eventf(podRef(pod), v1.EventTypeNormal, "TaintManagerEviction", "Cancelling deletion of Pod %s", pod.String())
	tc.observe(Transition{Kind: TransitionEvictionCancelled, Node: nodeName, Pod: pod.String()})
}

func podRef(pod types.NamespacedName) *v1.ObjectReference {
	return &v1.ObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, Namespace: pod.Namespace}
}
