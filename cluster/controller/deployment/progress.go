package deployment

import (
	"context"
	"fmt"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// syncRolloutStatus writes the status of a rollout step, with the
// Progressing condition: NewReplicaSetAvailable once complete,
// ReplicaSetUpdated (its lastUpdateTime refreshed) whenever pods moved
// forward, ProgressDeadlineExceeded once nothing moved for
// progressDeadlineSeconds. A ReplicaSet's ReplicaFailure is carried over.
func (dc *Controller) syncRolloutStatus(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	now := dc.clock.Now()
	status := calculateStatus(allRSs, newRS, d, now)
	if !hasProgressDeadline(d) {
		removeCondition(&status, appsv1.DeploymentProgressing)
	}
	cur := getCondition(d.Status, appsv1.DeploymentProgressing)
	// A complete rollout that is merely resynced (or scaled) is not
	// checked for progress again.
	complete := status.Replicas == status.UpdatedReplicas && cur != nil && cur.Reason == NewRSAvailableReason
	if hasProgressDeadline(d) && !complete {
		switch {
		case deploymentComplete(d, &status):
			msg := fmt.Sprintf("Deployment %q has successfully progressed.", d.Name)
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q has successfully progressed.", newRS.Name)
			}
			setCondition(&status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, NewRSAvailableReason, msg, now))
		case deploymentProgressing(d, &status):
			msg := fmt.Sprintf("Deployment %q is progressing.", d.Name)
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q is progressing.", newRS.Name)
			}
			c := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReplicaSetUpdatedReason, msg, now)
			// setCondition ignores a condition with the same reason, but
			// progress must move lastUpdateTime (the deadline counts from
			// it); keep lastTransitionTime if it was True already.
			if cur != nil {
				if cur.Status == corev1.ConditionTrue {
					c.LastTransitionTime = cur.LastTransitionTime
				}
				removeCondition(&status, appsv1.DeploymentProgressing)
			}
			setCondition(&status, c)
		case deploymentTimedOut(d, &status, now):
			msg := fmt.Sprintf("Deployment %q has timed out progressing.", d.Name)
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q has timed out progressing.", newRS.Name)
			}
			setCondition(&status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, TimedOutReason, msg, now))
		}
	}
	if failures := replicaFailures(allRSs, newRS); len(failures) > 0 {
		setCondition(&status, failures[0])
	} else {
		removeCondition(&status, appsv1.DeploymentReplicaFailure)
	}
	if reflect.DeepEqual(d.Status, status) {
		dc.requeueStuckDeployment(d, status, now)
		return nil
	}
	d.Status = status
	return dc.updateStatus(ctx, d)
}

// replicaFailures returns the ReplicaFailure conditions of the new
// ReplicaSet, or else of the old ones.
func replicaFailures(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) []appsv1.DeploymentCondition {
	collect := func(sets []*appsv1.ReplicaSet) []appsv1.DeploymentCondition {
		var out []appsv1.DeploymentCondition
		for _, rs := range sets {
			if rs == nil {
				continue
			}
			for _, c := range rs.Status.Conditions {
				if c.Type == appsv1.ReplicaSetReplicaFailure {
					out = append(out, replicaSetToDeploymentCondition(c))
				}
			}
		}
		return out
	}
	if out := collect([]*appsv1.ReplicaSet{newRS}); len(out) > 0 {
		return out
	}
	return collect(allRSs)
}

// requeueStuckDeployment schedules a sync for the moment a rollout that
// shows no progress would pass its deadline: nothing else would wake the
// Deployment then (kubernetes#34458). It returns the delay, or -1 when
// there is nothing to check.
func (dc *Controller) requeueStuckDeployment(d *appsv1.Deployment, status appsv1.DeploymentStatus, now time.Time) time.Duration {
	cur := getCondition(d.Status, appsv1.DeploymentProgressing)
	if !hasProgressDeadline(d) || cur == nil {
		return -1
	}
	if deploymentComplete(d, &status) || cur.Reason == TimedOutReason {
		return -1
	}
	after := cur.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(now)
	if after < time.Second {
		// Due now; rate-limited, so a clock that disagrees cannot spin it.
		dc.enqueueRateLimited(d)
		return 0
	}
	// One more second absorbs timer skew (kubernetes#39785).
	dc.enqueueAfter(d, after+time.Second)
	return after
}

// checkPausedConditions sets Progressing to Unknown with DeploymentPaused
// or DeploymentResumed when spec.paused changed, so that time spent
// paused never counts against progressDeadlineSeconds. A timed-out
// rollout keeps its ProgressDeadlineExceeded.
func (dc *Controller) checkPausedConditions(ctx context.Context, d *appsv1.Deployment) error {
	if !hasProgressDeadline(d) {
		return nil
	}
	cur := getCondition(d.Status, appsv1.DeploymentProgressing)
	if cur != nil && cur.Reason == TimedOutReason {
		return nil
	}
	pausedCondition := cur != nil && cur.Reason == PausedDeployReason
	switch {
	case d.Spec.Paused && !pausedCondition:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, PausedDeployReason, "Deployment is paused", dc.clock.Now()))
	case !d.Spec.Paused && pausedCondition:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ResumedDeployReason, "Deployment is resumed", dc.clock.Now()))
	default:
		return nil
	}
	return dc.updateStatus(ctx, d)
}
