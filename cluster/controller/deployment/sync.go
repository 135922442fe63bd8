package deployment

import (
	"context"
	"fmt"
	"reflect"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
)

// syncDeployment converges the Deployment of key. In order: claim its
// ReplicaSets; a Deployment being deleted only reports; record pausing
// or resuming; a paused Deployment or a scaled one is scaled (in
// proportion, if a rollout is under way) without rolling out; otherwise
// the strategy takes the next rollout step. Every step is safe to repeat.
func (dc *Controller) syncDeployment(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // a key we never enqueue; retrying cannot help
	}
	cached, err := dc.dLister.Deployments(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if cached.Spec.Replicas == nil || cached.Spec.Selector == nil ||
		(isRollingUpdate(cached) && (cached.Spec.Strategy.RollingUpdate == nil || cached.Spec.Strategy.RollingUpdate.MaxSurge == nil)) {
		// The API server defaults these; the controller reads them
		// without checking again.
		dc.logger.Info("skipping Deployment without the fields the API server defaults", "deployment", key)
		return nil
	}
	d := cached.DeepCopy()
	if reflect.DeepEqual(d.Spec.Selector, &metav1.LabelSelector{}) {
		dc.recorder.Eventf(d, corev1.EventTypeWarning, "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			// Best effort: the event already told the user.
			_ = dc.updateStatus(ctx, d)
		}
		return nil
	}
	rsList, err := dc.getReplicaSetsForDeployment(ctx, d)
	if err != nil {
		return err
	}
	// The pods are listed now, even if only Recreate needs them, so that
	// they are not newer than the ReplicaSets.
	podMap, err := dc.getPodMapForDeployment(d, rsList)
	if err != nil {
		return err
	}
	if d.DeletionTimestamp != nil {
		return dc.syncStatusOnly(ctx, d, rsList)
	}
	if err := dc.checkPausedConditions(ctx, d); err != nil {
		return err
	}
	if d.Spec.Paused {
		return dc.sync(ctx, d, rsList)
	}
	scaling, err := dc.isScalingEvent(ctx, d, rsList)
	if err != nil {
		return err
	}
	if scaling {
		return dc.sync(ctx, d, rsList)
	}
	switch d.Spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		return dc.rolloutRecreate(ctx, d, rsList, podMap)
	case appsv1.RollingUpdateDeploymentStrategyType:
		return dc.rolloutRolling(ctx, d, rsList)
	}
	return fmt.Errorf("unexpected deployment strategy type: %s", d.Spec.Strategy.Type)
}

// getReplicaSetsForDeployment adopts matching orphan ReplicaSets, releases
// owned ones that stopped matching, and returns the Deployment's.
func (dc *Controller) getReplicaSetsForDeployment(ctx context.Context, d *appsv1.Deployment) ([]*appsv1.ReplicaSet, error) {
	// All of them: owned ones that no longer match must be released.
	all, err := dc.rsLister.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s has invalid label selector: %w", d.Namespace, d.Name, err)
	}
	canAdopt := controllerutil.RecheckDeletionTimestamp(func(ctx context.Context) (metav1.Object, error) {
		fresh, err := dc.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if fresh.UID != d.UID {
			return nil, fmt.Errorf("original Deployment %v/%v is gone: got uid %v, wanted %v", d.Namespace, d.Name, fresh.UID, d.UID)
		}
		return fresh, nil
	})
	m := controllerutil.NewReplicaSetControllerRefManager(dc.client, d, selector, controllerKind, canAdopt)
	return m.ClaimReplicaSets(ctx, all)
}

// getPodMapForDeployment groups the pods the selector matches by their
// ReplicaSet (only the Deployment's). Finished pods are kept: Recreate
// must know that no old pod runs any more.
func (dc *Controller) getPodMapForDeployment(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (map[types.UID][]*corev1.Pod, error) {
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, err
	}
	pods, err := dc.podLister.Pods(d.Namespace).List(selector)
	if err != nil {
		return nil, err
	}
	podMap := make(map[types.UID][]*corev1.Pod, len(rsList))
	for _, rs := range rsList {
		podMap[rs.UID] = nil
	}
	for _, pod := range pods {
		ref := metav1.GetControllerOf(pod)
		if ref == nil {
			continue
		}
		if _, ok := podMap[ref.UID]; ok {
			podMap[ref.UID] = append(podMap[ref.UID], pod)
		}
	}
	return podMap, nil
}

// syncStatusOnly writes the status without touching any ReplicaSet.
func (dc *Controller) syncStatusOnly(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := dc.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	return dc.syncDeploymentStatus(ctx, append(oldRSs, newRS), newRS, d)
}

// sync handles a scaled or paused Deployment: scale, clean up history
// when paused, and write the status. No rollout step is taken.
func (dc *Controller) sync(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := dc.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	if err := dc.scale(ctx, d, newRS, oldRSs); err != nil {
		return err
	}
	if d.Spec.Paused {
		if err := dc.cleanupDeployment(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return dc.syncDeploymentStatus(ctx, append(oldRSs, newRS), newRS, d)
}

// isScalingEvent reports whether spec.replicas differs from the
// desired-replicas annotation of an active ReplicaSet: the Deployment was
// scaled, not given a new template.
func (dc *Controller) isScalingEvent(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	newRS, oldRSs, err := dc.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return false, err
	}
	for _, rs := range filterActiveReplicaSets(append(oldRSs, newRS)) {
		if desired, ok := intAnnotation(rs, DesiredReplicasAnnotation); ok && desired != *d.Spec.Replicas {
			return true, nil
		}
	}
	return false, nil
}

// scale brings the ReplicaSets to the Deployment's size. With one active
// ReplicaSet (or none, then the newest) it simply gets spec.replicas. A
// saturated new ReplicaSet leaves nothing to the old ones. Otherwise, in
// a rolling update, the difference to spec.replicas + maxSurge is spread
// over the active ReplicaSets in proportion to their size, largest first;
// what rounding leaves goes to the largest.
func (dc *Controller) scale(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) error {
	if rs := findActiveOrLatest(newRS, oldRSs); rs != nil {
		if *rs.Spec.Replicas == *d.Spec.Replicas {
			return nil
		}
		_, _, err := dc.scaleReplicaSetAndRecordEvent(ctx, rs, *d.Spec.Replicas, d)
		return err
	}
	if isSaturated(d, newRS) {
		for _, old := range filterActiveReplicaSets(oldRSs) {
			if _, _, err := dc.scaleReplicaSetAndRecordEvent(ctx, old, 0, d); err != nil {
				return err
			}
		}
		return nil
	}
	if !isRollingUpdate(d) {
		return nil
	}
	active := filterActiveReplicaSets(append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS))
	allowed := int32(0)
	if *d.Spec.Replicas > 0 {
		allowed = *d.Spec.Replicas + maxSurge(d)
	}
	toAdd := allowed - replicaCount(active)
	operation := ""
	switch {
	case toAdd > 0:
		sort.Sort(replicaSetsBySizeNewer(active))
		operation = "up"
	case toAdd < 0:
		sort.Sort(replicaSetsBySizeOlder(active))
		operation = "down"
	}
	added := int32(0)
	sizes := make(map[string]int32, len(active))
	for _, rs := range active {
		if toAdd != 0 {
			p := replicaSetProportion(rs, d, toAdd, added)
			sizes[rs.Name] = *rs.Spec.Replicas + p
			added += p
		} else {
			sizes[rs.Name] = *rs.Spec.Replicas
		}
	}
	for i, rs := range active {
		if i == 0 && toAdd != 0 {
			sizes[rs.Name] = max(sizes[rs.Name]+toAdd-added, 0)
		}
		if _, _, err := dc.scaleReplicaSet(ctx, rs, sizes[rs.Name], d, operation); err != nil {
			// The Deployment is requeued; the next sync starts over.
			return err
		}
	}
	return nil
}

// scaleReplicaSetAndRecordEvent scales rs to newScale if it is not there.
func (dc *Controller) scaleReplicaSetAndRecordEvent(ctx context.Context, rs *appsv1.ReplicaSet, newScale int32, d *appsv1.Deployment) (bool, *appsv1.ReplicaSet, error) {
	if *rs.Spec.Replicas == newScale {
		return false, rs, nil
	}
	operation := "down"
	if *rs.Spec.Replicas < newScale {
		operation = "up"
	}
	return dc.scaleReplicaSet(ctx, rs, newScale, d, operation)
}

// scaleReplicaSet writes the ReplicaSet's new size and the Deployment's
// current desired and max replicas, and records ScalingReplicaSet when
// the size changed.
func (dc *Controller) scaleReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, newScale int32, d *appsv1.Deployment, operation string) (bool, *appsv1.ReplicaSet, error) {
	sizeChanged := *rs.Spec.Replicas != newScale
	desired, maxReplicas := *d.Spec.Replicas, *d.Spec.Replicas+maxSurge(d)
	if !sizeChanged && !replicasAnnotationsNeedUpdate(rs, desired, maxReplicas) {
		return false, rs, nil
	}
	oldScale := *rs.Spec.Replicas
	rsCopy := rs.DeepCopy()
	*rsCopy.Spec.Replicas = newScale
	setReplicasAnnotations(rsCopy, desired, maxReplicas)
	updated, err := dc.client.AppsV1().ReplicaSets(rsCopy.Namespace).Update(ctx, rsCopy, metav1.UpdateOptions{})
	if err != nil {
		return false, rs, err
	}
	if sizeChanged {
		dc.recorder.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled %s replica set %s from %d to %d", operation, updated.Name, oldScale, newScale)
	}
	return sizeChanged, updated, nil
}

// cleanupDeployment deletes the oldest ReplicaSets beyond
// revisionHistoryLimit, never one that still has pods, wants pods, or
// whose status is behind its spec.
func (dc *Controller) cleanupDeployment(ctx context.Context, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment) error {
	if !hasRevisionHistoryLimit(d) {
		return nil
	}
	var cleanable []*appsv1.ReplicaSet
	for _, rs := range oldRSs {
		if rs != nil && rs.DeletionTimestamp == nil {
			cleanable = append(cleanable, rs)
		}
	}
	diff := int32(len(cleanable)) - *d.Spec.RevisionHistoryLimit
	if diff <= 0 {
		return nil
	}
	sort.Sort(replicaSetsByRevision(cleanable))
	for _, rs := range cleanable[:diff] {
		if rs.Status.Replicas != 0 || *rs.Spec.Replicas != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		err := dc.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			// Stop at the first error rather than pile more requests on
			// a struggling API server.
			return err
		}
	}
	return nil
}
