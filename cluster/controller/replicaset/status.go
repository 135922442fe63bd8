package replicaset

import (
	"context"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
)

// calculateStatus counts what the ReplicaSet runs: active pods, those
// carrying all the template's labels, ready ones, ones ready for
// minReadySeconds, and terminating ones. A failed create or delete shows
// as the ReplicaFailure condition until a sync manages without error.
func calculateStatus(rs *appsv1.ReplicaSet, activePods, terminatingPods []*corev1.Pod, manageErr error, now time.Time) appsv1.ReplicaSetStatus {
	status := rs.Status
	templateLabels := labels.Set(rs.Spec.Template.Labels).AsSelectorPreValidated()
	var fullyLabeled, ready, available int32
	for _, pod := range activePods {
		if templateLabels.Matches(labels.Set(pod.Labels)) {
			fullyLabeled++
		}
		if controllerutil.IsPodReady(pod) {
			ready++
			if controllerutil.IsPodAvailable(pod, rs.Spec.MinReadySeconds, metav1.NewTime(now)) {
				available++
			}
		}
	}
	failure := condition(rs.Status, appsv1.ReplicaSetReplicaFailure)
	switch {
	case manageErr != nil && failure == nil:
		reason := ""
		if diff := len(activePods) - int(*rs.Spec.Replicas); diff < 0 {
			reason = controllerutil.FailedCreatePodReason
		} else if diff > 0 {
			reason = controllerutil.FailedDeletePodReason
		}
		setCondition(&status, appsv1.ReplicaSetCondition{
			Type:               appsv1.ReplicaSetReplicaFailure,
			Status:             corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now),
			Reason:             reason,
			Message:            manageErr.Error(),
		})
	case manageErr == nil && failure != nil:
		removeCondition(&status, appsv1.ReplicaSetReplicaFailure)
	}
	status.Replicas = int32(len(activePods))
	status.FullyLabeledReplicas = fullyLabeled
	status.ReadyReplicas = ready
	status.AvailableReplicas = available
	status.TerminatingReplicas = ptr.To(int32(len(terminatingPods)))
	return status
}

// updateStatus writes newStatus with the generation it was computed
// from, unless nothing changed. A conflict is retried once on a fresh
// read.
func (rsc *Controller) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet, newStatus appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, error) {
	if rs.Status.Replicas == newStatus.Replicas &&
		rs.Status.FullyLabeledReplicas == newStatus.FullyLabeledReplicas &&
		rs.Status.ReadyReplicas == newStatus.ReadyReplicas &&
		rs.Status.AvailableReplicas == newStatus.AvailableReplicas &&
		ptr.Equal(rs.Status.TerminatingReplicas, newStatus.TerminatingReplicas) &&
		rs.Generation == rs.Status.ObservedGeneration &&
		reflect.DeepEqual(rs.Status.Conditions, newStatus.Conditions) {
		return rs, nil
	}
	// Record the generation this status describes, not a later one.
	newStatus.ObservedGeneration = rs.Generation
	for i := 0; ; i++ {
		rs.Status = newStatus
		updated, err := rsc.sets.UpdateStatus(ctx, rs)
		if err == nil {
			return updated, nil
		}
		if i >= statusUpdateRetries {
			return nil, err
		}
		if rs, err = rsc.sets.Fetch(ctx, rs.Namespace, rs.Name); err != nil {
			return nil, err
		}
	}
}

func condition(status appsv1.ReplicaSetStatus, t appsv1.ReplicaSetConditionType) *appsv1.ReplicaSetCondition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == t {
			return &status.Conditions[i]
		}
	}
	return nil
}

// setCondition adds or replaces the condition of c's type, unless one
// with the same status and reason is there already.
func setCondition(status *appsv1.ReplicaSetStatus, c appsv1.ReplicaSetCondition) {
	if cur := condition(*status, c.Type); cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	removeCondition(status, c.Type)
	status.Conditions = append(status.Conditions, c)
}

// removeCondition drops the condition of type t, building a new slice so
// that the cached object's conditions stay untouched.
func removeCondition(status *appsv1.ReplicaSetStatus, t appsv1.ReplicaSetConditionType) {
	var kept []appsv1.ReplicaSetCondition
	for _, c := range status.Conditions {
		if c.Type != t {
			kept = append(kept, c)
		}
	}
	status.Conditions = kept
}
