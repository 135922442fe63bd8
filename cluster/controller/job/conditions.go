package job

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition messages, as upstream's.
const (
	backoffLimitExceededMessage = "Job has reached the specified backoff limit"
	deadlineExceededMessage     = "Job was active longer than specified deadline"
	completionsReachedMessage   = "Reached expected number of succeeded pods"
)

func newCondition(t batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) *batchv1.JobCondition {
	return &batchv1.JobCondition{
		Type:               t,
		Status:             status,
		LastProbeTime:      metav1.NewTime(now),
		LastTransitionTime: metav1.NewTime(now),
		Reason:             reason,
		Message:            message,
	}
}

func findConditionByType(list []batchv1.JobCondition, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range list {
		if list[i].Type == t {
			return &list[i]
		}
	}
	return nil
}

// ensureJobConditionStatus sets the condition of type t, reporting
// whether the list changed. A False condition is never added where there
// was none: from nothing to False says nothing.
func ensureJobConditionStatus(list []batchv1.JobCondition, t batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) ([]batchv1.JobCondition, bool) {
	if c := findConditionByType(list, t); c != nil {
		if c.Status != status || c.Reason != reason || c.Message != message {
			*c = *newCondition(t, status, reason, message, now)
			return list, true
		}
		return list, false
	}
	if status != corev1.ConditionFalse {
		return append(list, *newCondition(t, status, reason, message, now)), true
	}
	return list, false
}

// isJobFinished reports whether the Job has a Complete or Failed
// condition that is True: nothing is left to do for it.
func isJobFinished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// hasTrueCondition returns the Job's condition of type t if it is True.
func hasTrueCondition(j *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	if c := findConditionByType(j.Status.Conditions, t); c != nil && c.Status == corev1.ConditionTrue {
		return c
	}
	return nil
}
