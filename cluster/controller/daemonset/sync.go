package daemonset

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/cache"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
)

// syncDaemonSet converges the DaemonSet of key: a pod on every node that
// should run one, none on the others, the next step of a rolling update,
// then the status. While earlier creates and deletes are unobserved it
// only writes the status (without raising observedGeneration: it did not
// act on that generation).
func (dsc *Controller) syncDaemonSet(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // a key we never enqueue; retrying cannot help
	}
	ds, err := dsc.dsLister.DaemonSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		dsc.expectations.DeleteExpectations(key)
		return nil
	}
	if err != nil {
		return err
	}
	nodes, err := dsc.nodeLister.List(labels.Everything())
	if err != nil {
		return err
	}
	if reflect.DeepEqual(ds.Spec.Selector, &metav1.LabelSelector{}) {
		dsc.recorder.Event(ds, corev1.EventTypeWarning, SelectingAllReason, "This daemon set is selecting all pods. A non-empty selector is required.")
		return nil
	}
	// A DaemonSet being deleted is left alone: the garbage collector
	// removes its pods, and a status computed now would be meaningless.
	if ds.DeletionTimestamp != nil {
		return nil
	}
	cur, old, err := dsc.constructHistory(ctx, ds)
	if err != nil {
		return fmt.Errorf("failed to construct revisions of DaemonSet: %w", err)
	}
	hash := cur.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	if !dsc.expectations.SatisfiedExpectations(key) {
		return dsc.updateDaemonSetStatus(ctx, ds, nodes, hash, false)
	}
	err = dsc.updatePods(ctx, ds, nodes, hash, key, old)
	statusErr := dsc.updateDaemonSetStatus(ctx, ds, nodes, hash, true)
	if err != nil {
		return err
	}
	return statusErr
}

// updatePods creates and deletes pods, then, once those are
// observed, takes a rolling-update step, and trims the history.
func (dsc *Controller) updatePods(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, hash, key string, old []*appsv1.ControllerRevision) error {
	if err := dsc.manage(ctx, ds, nodes, hash); err != nil {
		return err
	}
	if dsc.expectations.SatisfiedExpectations(key) && ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if err := dsc.rollingUpdate(ctx, ds, nodes, hash); err != nil {
			return err
		}
	}
	return dsc.cleanupHistory(ctx, ds, old)
}

// getDaemonPods claims the DaemonSet's pods: matching orphans are adopted,
// owned pods that stopped matching are released.
func (dsc *Controller) getDaemonPods(ctx context.Context, ds *appsv1.DaemonSet) ([]*corev1.Pod, error) {
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil, err
	}
	// All pods: owned ones that stopped matching must be released.
	pods, err := dsc.podLister.Pods(ds.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	canAdopt := controllerutil.RecheckDeletionTimestamp(func(ctx context.Context) (metav1.Object, error) {
		fresh, err := dsc.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if fresh.UID != ds.UID {
			return nil, fmt.Errorf("original DaemonSet %v/%v is gone: got uid %v, wanted %v", ds.Namespace, ds.Name, fresh.UID, ds.UID)
		}
		return fresh, nil
	})
	m := controllerutil.NewPodControllerRefManager(dsc.podControl, ds, selector, controllerKind, canAdopt)
	return m.ClaimPods(ctx, pods)
}

// getNodesToDaemonPods groups the DaemonSet's pods by the node they are
// for. Finished pods that are already being deleted are left out: the
// kubelet or pod GC removes them, nothing is left to do with them.
func (dsc *Controller) getNodesToDaemonPods(ctx context.Context, ds *appsv1.DaemonSet) (map[string][]*corev1.Pod, error) {
	pods, err := dsc.getDaemonPods(ctx, ds)
	if err != nil {
		return nil, err
	}
	byNode := map[string][]*corev1.Pod{}
	for _, pod := range pods {
		if controllerutil.IsPodTerminal(pod) && pod.DeletionTimestamp != nil {
			continue
		}
		node, err := targetNodeName(pod)
		if err != nil {
			dsc.logger.Info("failed to get target node name of pod in DaemonSet", "pod", controllerutil.PodKey(pod), "err", err)
			continue
		}
		byNode[node] = append(byNode[node], pod)
	}
	return byNode, nil
}

// manage decides node by node which pods to create and delete, and does
// so.
func (dsc *Controller) manage(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, hash string) error {
	byNode, err := dsc.getNodesToDaemonPods(ctx, ds)
	if err != nil {
		return fmt.Errorf("couldn't get node to daemon pod mapping for daemon set %q: %w", ds.Name, err)
	}
	var nodesNeedingPods, podsToDelete []string
	for _, node := range nodes {
		create, del := dsc.podsShouldBeOnNode(node, byNode, ds, hash)
		nodesNeedingPods = append(nodesNeedingPods, create...)
		podsToDelete = append(podsToDelete, del...)
	}
	// Pods for nodes that no longer exist and were never scheduled would
	// wait for ever.
	podsToDelete = append(podsToDelete, unscheduledPodsWithoutNode(nodes, byNode)...)
	return dsc.syncNodes(ctx, ds, podsToDelete, nodesNeedingPods, hash)
}

// podsShouldBeOnNode compares one node's daemon pods with what should run
// there: create one if none should be missing; delete failed pods (with a
// backoff) and succeeded ones, so they are replaced; delete duplicates
// (keeping the oldest, or with maxSurge an old and a new one while the new
// is not yet available); delete all where the DaemonSet may not run.
func (dsc *Controller) podsShouldBeOnNode(node *corev1.Node, byNode map[string][]*corev1.Pod, ds *appsv1.DaemonSet, hash string) (nodesNeedingPods, podsToDelete []string) {
	shouldRun, shouldContinueRunning := nodeShouldRunDaemonPod(node, ds)
	pods, exists := byNode[node.Name]
	switch {
	case shouldRun && !exists:
		nodesNeedingPods = append(nodesNeedingPods, node.Name)
	case shouldContinueRunning:
		var running []*corev1.Pod
		for _, pod := range pods {
			if pod.DeletionTimestamp != nil {
				continue
			}
			switch pod.Status.Phase {
			case corev1.PodFailed:
				key := failedPodsBackoffKey(ds, node.Name)
				now := dsc.failedPodsBackoff.Clock.Now()
				if dsc.failedPodsBackoff.IsInBackOffSinceUpdate(key, now) {
					dsc.enqueueAfter(ds, dsc.failedPodsBackoff.Get(key))
					continue
				}
				dsc.failedPodsBackoff.Next(key, now)
				dsc.recorder.Eventf(ds, corev1.EventTypeWarning, FailedDaemonPodReason,
					"Found failed daemon pod %s/%s on node %s, will try to kill it", pod.Namespace, pod.Name, node.Name)
				podsToDelete = append(podsToDelete, pod.Name)
			case corev1.PodSucceeded:
				dsc.recorder.Eventf(ds, corev1.EventTypeNormal, SucceededDaemonPodReason,
					"Found succeeded daemon pod %s/%s on node %s, will try to delete it", pod.Namespace, pod.Name, node.Name)
				podsToDelete = append(podsToDelete, pod.Name)
			default:
				running = append(running, pod)
			}
		}
		if !allowsSurge(ds) {
			if len(running) > 1 {
				sort.Sort(podByCreationTimestampAndPhase(running))
				for _, pod := range running[1:] {
					podsToDelete = append(podsToDelete, pod.Name)
				}
			}
			break
		}
		if len(running) <= 1 {
			if len(running) == 0 && shouldRun {
				// The failed or finished pod is going; replace it.
				nodesNeedingPods = append(nodesNeedingPods, node.Name)
			}
			break
		}
		// With surge, an old and a new pod may share a node while the new
		// one is not available yet (and the old one still ready); any
		// other pod goes.
		sort.Sort(podByCreationTimestampAndPhase(running))
		var oldestNew, oldestOld *corev1.Pod
		for _, pod := range running {
			if isPodUpdated(pod, hash) {
				if oldestNew == nil {
					oldestNew = pod
					continue
				}
			} else if oldestOld == nil {
				oldestOld = pod
				continue
			}
			podsToDelete = append(podsToDelete, pod.Name)
		}
		if oldestNew != nil && oldestOld != nil {
			now := metav1.NewTime(dsc.failedPodsBackoff.Clock.Now())
			if !controllerutil.IsPodReady(oldestOld) || controllerutil.IsPodAvailable(oldestNew, ds.Spec.MinReadySeconds, now) {
				podsToDelete = append(podsToDelete, oldestOld.Name)
			}
		}
	case !shouldContinueRunning && exists:
		for _, pod := range pods {
			if pod.DeletionTimestamp == nil {
				podsToDelete = append(podsToDelete, pod.Name)
			}
		}
	}
	return nodesNeedingPods, podsToDelete
}

func failedPodsBackoffKey(ds *appsv1.DaemonSet, nodeName string) string {
	return fmt.Sprintf("%s/%d/%s", ds.UID, ds.Status.ObservedGeneration, nodeName)
}

// unscheduledPodsWithoutNode returns the unbound pods meant for nodes that
// no longer exist.
func unscheduledPodsWithoutNode(nodes []*corev1.Node, byNode map[string][]*corev1.Pod) []string {
	exists := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		exists[n.Name] = true
	}
	var out []string
	for name, pods := range byNode {
		if exists[name] {
			continue
		}
		for _, pod := range pods {
			if pod.Spec.NodeName == "" {
				out = append(out, pod.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// syncNodes creates a pod on each node of nodesNeedingPods and deletes
// podsToDelete, at most burstReplicas of each. Creates go in slow-start
// batches; a batch with a failure stops the rest, which a later sync
// retries. Each pod is pinned to its node by node affinity, for the
// scheduler to bind.
func (dsc *Controller) syncNodes(ctx context.Context, ds *appsv1.DaemonSet, podsToDelete, nodesNeedingPods []string, hash string) error {
	key, err := cache.MetaNamespaceKeyFunc(ds)
	if err != nil {
		return err
	}
	createDiff := min(len(nodesNeedingPods), dsc.burstReplicas)
	deleteDiff := min(len(podsToDelete), dsc.burstReplicas)
	// Expect before acting: the informer may report a pod before Create
	// even returns.
	dsc.expectations.SetExpectations(key, createDiff, deleteDiff)

	errs := make(chan error, createDiff+deleteDiff)
	template := podTemplate(ds, hash)
	ref := metav1.NewControllerRef(ds, controllerKind)
	var wg sync.WaitGroup
	for pos, batch := 0, min(createDiff, controllerutil.SlowStartInitialBatchSize); pos < createDiff; pos, batch = pos+batch, min(2*batch, createDiff-(pos+batch)) {
		errorsBefore := len(errs)
		for _, nodeName := range nodesNeedingPods[pos : pos+batch] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t := template.DeepCopy()
				t.Spec.Affinity = replaceNodeNameAffinity(t.Spec.Affinity, nodeName)
				err := dsc.podControl.CreatePods(ctx, ds.Namespace, t, ds, ref)
				if err == nil || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					return
				}
				// This create will never be observed.
				dsc.expectations.CreationObserved(key)
				errs <- err
			}()
		}
		wg.Wait()
		if skipped := createDiff - (pos + batch); len(errs) > errorsBefore && skipped > 0 {
			// Nor will the creates never sent.
			dsc.expectations.LowerExpectations(key, skipped, 0)
			break
		}
	}
	for _, name := range podsToDelete[:deleteDiff] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := dsc.podControl.DeletePod(ctx, ds.Namespace, name, ds); err != nil {
				dsc.expectations.DeletionObserved(key)
				if !apierrors.IsNotFound(err) {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return utilerrors.NewAggregate(all)
}

// podByCreationTimestampAndPhase sorts scheduled pods first, then oldest
// first, then by name: the first is the pod a node keeps.
type podByCreationTimestampAndPhase []*corev1.Pod

func (o podByCreationTimestampAndPhase) Len() int      { return len(o) }
func (o podByCreationTimestampAndPhase) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o podByCreationTimestampAndPhase) Less(i, j int) bool {
	si, sj := o[i].Spec.NodeName != "", o[j].Spec.NodeName != ""
	if si != sj {
		return si
	}
	if o[i].CreationTimestamp.Equal(&o[j].CreationTimestamp) {
		return o[i].Name < o[j].Name
	}
	return o[i].CreationTimestamp.Before(&o[j].CreationTimestamp)
}
