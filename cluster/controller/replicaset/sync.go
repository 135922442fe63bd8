package replicaset

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/cache"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
)

// sync converges the ReplicaSet of key: claim its pods, create or delete
// the difference to spec.replicas (unless earlier creates and deletes are
// still unobserved), then write the status. It is safe to run again at
// any time.
func (rsc *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // a key we never enqueue; retrying cannot help
	}
	rs, err := rsc.sets.Get(namespace, name)
	if apierrors.IsNotFound(err) {
		rsc.expectations.DeleteExpectations(key)
		return nil
	}
	if err != nil {
		return err
	}
	if rs.Spec.Replicas == nil {
		// The API server defaults it; the controller reads it without
		// checking again.
		rsc.logger.Info("skipping ReplicaSet without spec.replicas", "replicaSet", key)
		return nil
	}
	// Read the expectations before the pods: a pod created after this
	// point only defers the sync to the next event.
	needsSync := rsc.expectations.SatisfiedExpectations(key)
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		rsc.logger.Info("invalid selector", "replicaSet", key, "err", err)
		return nil
	}
	allPods, err := rsc.podLister.Pods(rs.Namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	// Pods that finished or are being deleted do not count; a new one
	// replaces them at once.
	activePods, err := rsc.claimPods(ctx, rs, selector, controllerutil.FilterActivePods(allPods))
	if err != nil {
		return err
	}
	terminatingPods := filterClaimedPods(rs, selector, allPods, controllerutil.IsPodTerminating)

	var manageErr error
	if needsSync && rs.DeletionTimestamp == nil {
		manageErr = rsc.manageReplicas(ctx, activePods, rs)
	}
	rs = rs.DeepCopy()
	newStatus := calculateStatus(rs, activePods, terminatingPods, manageErr, rsc.clock.Now())
	if !rsc.sets.CountsTerminating() {
		newStatus.TerminatingReplicas = nil
	}
	updated, err := rsc.updateStatus(ctx, rs, newStatus)
	if err != nil {
		return err
	}
	// Ready pods become available minReadySeconds later, and nothing
	// else will wake the ReplicaSet then.
	if manageErr == nil && updated.Spec.MinReadySeconds > 0 &&
		updated.Status.ReadyReplicas == *updated.Spec.Replicas &&
		updated.Status.AvailableReplicas != *updated.Spec.Replicas {
		rsc.queue.AddAfter(key, time.Duration(updated.Spec.MinReadySeconds)*time.Second)
	}
	return manageErr
}

// claimPods adopts matching orphans and releases owned pods that stopped
// matching, and returns the ReplicaSet's pods.
func (rsc *Controller) claimPods(ctx context.Context, rs *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	canAdopt := controllerutil.RecheckDeletionTimestamp(func(ctx context.Context) (metav1.Object, error) {
		fresh, err := rsc.sets.Fetch(ctx, rs.Namespace, rs.Name)
		if err != nil {
			return nil, err
		}
		if fresh.UID != rs.UID {
			return nil, fmt.Errorf("original %v %v/%v is gone: got uid %v, wanted %v", rsc.kind.Kind, rs.Namespace, rs.Name, fresh.UID, rs.UID)
		}
		return fresh, nil
	})
	m := controllerutil.NewPodControllerRefManager(rsc.podControl, rs, selector, rsc.kind, canAdopt)
	return m.ClaimPods(ctx, pods)
}

// filterClaimedPods returns the pods rs controls that match selector and
// keep.
func filterClaimedPods(rs *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod, keep func(*corev1.Pod) bool) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if keep(p) && metav1.IsControlledBy(p, rs) && selector.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out
}

// manageReplicas creates or deletes pods to bring activePods to
// spec.replicas, at most burstReplicas per sync. Creates go out in
// slow-start batches; deletes in parallel, cheapest pods first.
func (rsc *Controller) manageReplicas(ctx context.Context, activePods []*corev1.Pod, rs *appsv1.ReplicaSet) error {
	key, err := cache.MetaNamespaceKeyFunc(rs)
	if err != nil {
		return err
	}
	diff := len(activePods) - int(*rs.Spec.Replicas)
	switch {
	case diff < 0:
		diff = min(-diff, rsc.burstReplicas)
		// Expect the creates before issuing them: the informer may show
		// a new pod before Create even returns.
		rsc.expectations.ExpectCreations(key, diff)
		ref := metav1.NewControllerRef(rs, rsc.kind)
		owner := rsc.sets.EventObject(rs)
		created, err := controllerutil.SlowStartBatch(diff, controllerutil.SlowStartInitialBatchSize, func() error {
			err := rsc.podControl.CreatePods(ctx, rs.Namespace, &rs.Spec.Template, owner, ref)
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				// The namespace is going away with the ReplicaSet in it.
				return nil
			}
			return err
		})
		// Creates never attempted, or failed, will never be observed.
		for range diff - created {
			rsc.expectations.CreationObserved(key)
		}
		return err
	case diff > 0:
		diff = min(diff, rsc.burstReplicas)
		related, err := rsc.relatedPods(rs)
		if err != nil {
			return err
		}
		toDelete := podsToDelete(activePods, related, diff, metav1.NewTime(rsc.clock.Now()))
		podKeys := make([]string, len(toDelete))
		for i, p := range toDelete {
			podKeys[i] = controllerutil.PodKey(p)
		}
		rsc.expectations.ExpectDeletions(key, podKeys)
		owner := rsc.sets.EventObject(rs)
		errs := make(chan error, diff)
		var wg sync.WaitGroup
		for _, pod := range toDelete {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := rsc.podControl.DeletePod(ctx, rs.Namespace, pod.Name, owner); err != nil {
					// This deletion will never be observed.
					rsc.expectations.DeletionObserved(key, controllerutil.PodKey(pod))
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
	return nil
}

// relatedPods returns the active pods of rs and of the ReplicaSets with
// the same controlling owner (a Deployment's other ReplicaSets): pods
// doubled up on a node with any of them are deleted first.
func (rsc *Controller) relatedPods(rs *appsv1.ReplicaSet) ([]*corev1.Pod, error) {
	sets := []*appsv1.ReplicaSet{rs}
	if owner := metav1.GetControllerOf(rs); owner != nil {
		all, err := rsc.sets.List(rs.Namespace)
		if err != nil {
			return nil, err
		}
		for _, other := range all {
			if other.UID == rs.UID {
				continue
			}
			if ref := metav1.GetControllerOf(other); ref != nil && ref.UID == owner.UID {
				sets = append(sets, other)
			}
		}
	}
	pods, err := rsc.podLister.Pods(rs.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var related []*corev1.Pod
	for _, p := range pods {
		if !controllerutil.IsPodActive(p) {
			continue
		}
		for _, s := range sets {
			if metav1.IsControlledBy(p, s) {
				related = append(related, p)
				break
			}
		}
	}
	return related, nil
}

// podsToDelete picks diff pods of active in upstream's ActivePodsWithRanks
// order. When all go, no order is needed.
func podsToDelete(active, related []*corev1.Pod, diff int, now metav1.Time) []*corev1.Pod {
	if diff >= len(active) {
		return active
	}
	perNode := map[string]int{}
	for _, p := range related {
		perNode[p.Spec.NodeName]++
	}
	ranked := controllerutil.ActivePodsWithRanks{
		Pods: append([]*corev1.Pod(nil), active...),
		Rank: make([]int, len(active)),
		Now:  now,
	}
	for i, p := range ranked.Pods {
		ranked.Rank[i] = perNode[p.Spec.NodeName]
	}
	sort.Sort(ranked)
	return ranked.Pods[:diff]
}
