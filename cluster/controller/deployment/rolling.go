package deployment

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
)

// rolloutRolling takes one step of a rolling update: scale the new
// ReplicaSet up as far as maxSurge allows, else scale old ones down as
// far as maxUnavailable allows, else (the rollout is done) clean up
// history. The status is written in every case; the next step waits for
// the ReplicaSets' status to change.
func (dc *Controller) rolloutRolling(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := dc.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	allRSs := append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)

	scaledUp, err := dc.reconcileNewReplicaSet(ctx, allRSs, newRS, d)
	if err != nil {
		return err
	}
	if scaledUp {
		return dc.syncRolloutStatus(ctx, allRSs, newRS, d)
	}
	scaledDown, err := dc.reconcileOldReplicaSets(ctx, allRSs, filterActiveReplicaSets(oldRSs), newRS, d)
	if err != nil {
		return err
	}
	if scaledDown {
		return dc.syncRolloutStatus(ctx, allRSs, newRS, d)
	}
	if deploymentComplete(d, &d.Status) {
		if err := dc.cleanupDeployment(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return dc.syncRolloutStatus(ctx, allRSs, newRS, d)
}

// reconcileNewReplicaSet scales the new ReplicaSet towards spec.replicas:
// down at once if it is larger, up within maxSurge over all ReplicaSets.
func (dc *Controller) reconcileNewReplicaSet(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	if *newRS.Spec.Replicas == *d.Spec.Replicas {
		return false, nil
	}
	if *newRS.Spec.Replicas > *d.Spec.Replicas {
		scaled, _, err := dc.scaleReplicaSetAndRecordEvent(ctx, newRS, *d.Spec.Replicas, d)
		return scaled, err
	}
	target, err := newRSNewReplicas(d, allRSs, newRS)
	if err != nil {
		return false, err
	}
	scaled, _, err := dc.scaleReplicaSetAndRecordEvent(ctx, newRS, target, d)
	return scaled, err
}

// reconcileOldReplicaSets scales old ReplicaSets down while at least
// spec.replicas - maxUnavailable pods stay available. The room to do so is
// all pods (by spec) minus that minimum, minus the new ReplicaSet's pods
// that are not available yet (they may never become so). Unhealthy old
// pods go first: removing them costs no availability, and they would
// otherwise block the rollout (kubernetes#16737).
func (dc *Controller) reconcileOldReplicaSets(ctx context.Context, allRSs, oldRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	if replicaCount(oldRSs) == 0 {
		return false, nil
	}
	minAvailable := *d.Spec.Replicas - maxUnavailable(d)
	newRSUnavailable := *newRS.Spec.Replicas - newRS.Status.AvailableReplicas
	maxScaledDown := replicaCount(allRSs) - minAvailable - newRSUnavailable
	if maxScaledDown <= 0 {
		return false, nil
	}
	oldRSs, cleaned, err := dc.cleanupUnhealthyReplicas(ctx, oldRSs, d, maxScaledDown)
	if err != nil {
		return false, err
	}
	allRSs = append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	scaledDown, err := dc.scaleDownOldReplicaSetsForRollingUpdate(ctx, allRSs, oldRSs, d)
	if err != nil {
		return false, err
	}
	return cleaned+scaledDown > 0, nil
}

// cleanupUnhealthyReplicas takes up to maxCleanup unavailable replicas
// off the old ReplicaSets, oldest first. The ReplicaSet controller
// deletes unready pods first, so these are the ones that go.
func (dc *Controller) cleanupUnhealthyReplicas(ctx context.Context, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment, maxCleanup int32) ([]*appsv1.ReplicaSet, int32, error) {
	sort.Sort(replicaSetsByCreationTimestamp(oldRSs))
	var total int32
	for i, rs := range oldRSs {
		if total >= maxCleanup {
			break
		}
		if *rs.Spec.Replicas == 0 || *rs.Spec.Replicas == rs.Status.AvailableReplicas {
			continue
		}
		count := min(maxCleanup-total, *rs.Spec.Replicas-rs.Status.AvailableReplicas)
		target := *rs.Spec.Replicas - count
		if target > *rs.Spec.Replicas {
			return nil, 0, fmt.Errorf("when cleaning up unhealthy replicas, got invalid request to scale down %s/%s %d -> %d", rs.Namespace, rs.Name, *rs.Spec.Replicas, target)
		}
		_, updated, err := dc.scaleReplicaSetAndRecordEvent(ctx, rs, target, d)
		if err != nil {
			return nil, total, err
		}
		total += count
		oldRSs[i] = updated
	}
	return oldRSs, total, nil
}

// scaleDownOldReplicaSetsForRollingUpdate takes available replicas off
// the old ReplicaSets, oldest first, down to spec.replicas -
// maxUnavailable available pods over all ReplicaSets.
func (dc *Controller) scaleDownOldReplicaSetsForRollingUpdate(ctx context.Context, allRSs, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment) (int32, error) {
	minAvailable := *d.Spec.Replicas - maxUnavailable(d)
	available := sumStatus(allRSs, availableReplicas)
	if available <= minAvailable {
		return 0, nil
	}
	sort.Sort(replicaSetsByCreationTimestamp(oldRSs))
	var total int32
	toScaleDown := available - minAvailable
	for _, rs := range oldRSs {
		if total >= toScaleDown {
			break
		}
		if *rs.Spec.Replicas == 0 {
			continue
		}
		count := min(*rs.Spec.Replicas, toScaleDown-total)
		target := *rs.Spec.Replicas - count
		if target > *rs.Spec.Replicas {
			return 0, fmt.Errorf("when scaling down old RS, got invalid request to scale down %s/%s %d -> %d", rs.Namespace, rs.Name, *rs.Spec.Replicas, target)
		}
		if _, _, err := dc.scaleReplicaSetAndRecordEvent(ctx, rs, target, d); err != nil {
			return total, err
		}
		total += count
	}
	return total, nil
}
