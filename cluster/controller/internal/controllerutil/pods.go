package controllerutil

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodKey is the key expectations use for a pod: namespace/name.
func PodKey(pod *corev1.Pod) string {
	return pod.Namespace + "/" + pod.Name
}

// IsPodTerminal reports whether the pod's containers have stopped for good.
func IsPodTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// IsPodActive reports whether a pod counts towards a controller's replicas:
// it has not finished and nobody asked for it to be deleted.
func IsPodActive(pod *corev1.Pod) bool {
	return !IsPodTerminal(pod) && pod.DeletionTimestamp == nil
}

// IsPodTerminating reports whether a pod is being deleted but may still
// run: it has a deletionTimestamp and has not reached a terminal phase.
func IsPodTerminating(pod *corev1.Pod) bool {
	return !IsPodTerminal(pod) && pod.DeletionTimestamp != nil
}

// FilterActivePods returns the active pods, in their order.
func FilterActivePods(pods []*corev1.Pod) []*corev1.Pod {
	var active []*corev1.Pod
	for _, p := range pods {
		if IsPodActive(p) {
			active = append(active, p)
		}
	}
	return active
}

// CountTerminatingPods counts the pods that are being deleted and may
// still run.
func CountTerminatingPods(pods []*corev1.Pod) int32 {
	var n int32
	for _, p := range pods {
		if IsPodTerminating(p) {
			n++
		}
	}
	return n
}

// PodReadyCondition returns the pod's Ready condition, or nil.
func PodReadyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// IsPodReady reports whether the pod's Ready condition is True.
func IsPodReady(pod *corev1.Pod) bool {
	c := PodReadyCondition(pod)
	return c != nil && c.Status == corev1.ConditionTrue
}

// IsPodAvailable reports whether the pod has been ready for at least
// minReadySeconds at now; with minReadySeconds 0, ready is available.
func IsPodAvailable(pod *corev1.Pod, minReadySeconds int32, now metav1.Time) bool {
	if !IsPodReady(pod) {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	since := PodReadyCondition(pod).LastTransitionTime
	return !since.IsZero() && since.Add(time.Duration(minReadySeconds)*time.Second).Before(now.Time)
}

// podReadyTime is when a ready pod became ready; the zero time otherwise.
func podReadyTime(pod *corev1.Pod) *metav1.Time {
	if IsPodReady(pod) {
		return &PodReadyCondition(pod).LastTransitionTime
	}
	return &metav1.Time{}
}
