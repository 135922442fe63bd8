package deployment

import (
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reasons of the Available and Progressing conditions, as upstream's.
const (
	// MinimumReplicasAvailable: at least spec.replicas - maxUnavailable
	// pods are available.
	MinimumReplicasAvailable = "MinimumReplicasAvailable"
	// MinimumReplicasUnavailable: fewer are.
	MinimumReplicasUnavailable = "MinimumReplicasUnavailable"
	// NewReplicaSetReason: the controller created the new ReplicaSet.
	NewReplicaSetReason = "NewReplicaSetCreated"
	// FoundNewRSReason: it found an existing one (first sync after
	// progressDeadlineSeconds was set).
	FoundNewRSReason = "FoundNewReplicaSet"
	// ReplicaSetUpdatedReason: the rollout made progress.
	ReplicaSetUpdatedReason = "ReplicaSetUpdated"
	// NewRSAvailableReason: the rollout is complete.
	NewRSAvailableReason = "NewReplicaSetAvailable"
	// TimedOutReason: no progress for progressDeadlineSeconds.
	TimedOutReason = "ProgressDeadlineExceeded"
	// FailedRSCreateReason: the new ReplicaSet could not be created.
	FailedRSCreateReason = "ReplicaSetCreateError"
	// PausedDeployReason and ResumedDeployReason mark spec.paused
	// changes, so that a long pause does not read as lack of progress.
	PausedDeployReason  = "DeploymentPaused"
	ResumedDeployReason = "DeploymentResumed"
)

func newCondition(t appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{
		Type:               t,
		Status:             status,
		LastUpdateTime:     metav1.NewTime(now),
		LastTransitionTime: metav1.NewTime(now),
		Reason:             reason,
		Message:            message,
	}
}

func getCondition(status appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == t {
			return &status.Conditions[i]
		}
	}
	return nil
}

// setCondition puts c in the status unless a condition of its type with
// the same status and reason is there; a condition whose status did not
// change keeps its lastTransitionTime.
func setCondition(status *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	cur := getCondition(*status, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(status, c.Type)
	status.Conditions = append(status.Conditions, c)
}

// removeCondition drops the condition of type t into a new slice, so that
// a status copied from the cache never changes the cache.
func removeCondition(status *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	var kept []appsv1.DeploymentCondition
	for _, c := range status.Conditions {
		if c.Type != t {
			kept = append(kept, c)
		}
	}
	status.Conditions = kept
}

// hasProgressDeadline reports whether the Deployment asks for progress
// to be checked; MaxInt32 means never, as upstream.
func hasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

// hasRevisionHistoryLimit reports whether old ReplicaSets are cleaned up.
func hasRevisionHistoryLimit(d *appsv1.Deployment) bool {
	return d.Spec.RevisionHistoryLimit != nil && *d.Spec.RevisionHistoryLimit != math.MaxInt32
}

// deploymentComplete: every wanted pod is updated and available, no old
// pod is left, and the status describes the current generation.
func deploymentComplete(d *appsv1.Deployment, s *appsv1.DeploymentStatus) bool {
	return s.UpdatedReplicas == *d.Spec.Replicas &&
		s.Replicas == *d.Spec.Replicas &&
		s.AvailableReplicas == *d.Spec.Replicas &&
		s.ObservedGeneration >= d.Generation
}

// deploymentProgressing: since the last status, more pods were updated,
// fewer old ones remain, or more are ready or available.
func deploymentProgressing(d *appsv1.Deployment, s *appsv1.DeploymentStatus) bool {
	old := d.Status
	return s.UpdatedReplicas > old.UpdatedReplicas ||
		s.Replicas-s.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		s.ReadyReplicas > old.ReadyReplicas ||
		s.AvailableReplicas > old.AvailableReplicas
}

// deploymentTimedOut: the Progressing condition last moved more than
// progressDeadlineSeconds ago, and the rollout is not complete.
func deploymentTimedOut(d *appsv1.Deployment, s *appsv1.DeploymentStatus, now time.Time) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	c := getCondition(*s, appsv1.DeploymentProgressing)
	if c == nil {
		return false
	}
	// A finished rollout stays finished even if the Deployment is later
	// scaled and pods take long to come up; only a new rollout is
	// checked again.
	if c.Reason == NewRSAvailableReason {
		return false
	}
	if c.Reason == TimedOutReason {
		return true
	}
	deadline := time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second
	return c.LastUpdateTime.Add(deadline).Before(now)
}

// replicaSetToDeploymentCondition carries a ReplicaSet's ReplicaFailure
// condition over to its Deployment.
func replicaSetToDeploymentCondition(c appsv1.ReplicaSetCondition) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{
		Type:               appsv1.DeploymentConditionType(c.Type),
		Status:             c.Status,
		LastTransitionTime: c.LastTransitionTime,
		LastUpdateTime:     c.LastTransitionTime,
		Reason:             c.Reason,
		Message:            c.Message,
	}
}
