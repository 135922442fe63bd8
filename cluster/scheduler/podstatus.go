package scheduler

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// updatePodScheduledCondition sets PodScheduled=False with reason and
// message, writing only when the condition changes, as upstream's
// updatePod: a pod that fails the same way again costs no write.
func (s *Scheduler) updatePodScheduledCondition(ctx context.Context, pod *v1.Pod, reason, message string) error {
	newStatus := pod.Status.DeepCopy()
	cond := v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: reason, Message: message}
	if !setPodCondition(newStatus, cond, metav1.Now()) {
		return nil
	}
	return s.patchPodStatus(ctx, pod, &pod.Status, newStatus)
}

// setPodCondition puts cond into status and reports whether anything but
// the timestamps changed. The transition time moves only when the status
// does.
func setPodCondition(status *v1.PodStatus, cond v1.PodCondition, now metav1.Time) bool {
	for i := range status.Conditions {
		old := &status.Conditions[i]
		if old.Type != cond.Type {
			continue
		}
		if old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message {
			return false
		}
		cond.LastTransitionTime = old.LastTransitionTime
		if old.Status != cond.Status {
			cond.LastTransitionTime = now
		}
		*old = cond
		return true
	}
	cond.LastTransitionTime = now
	status.Conditions = append(status.Conditions, cond)
	return true
}

// patchPodStatus writes the difference between two statuses as a
// strategic merge patch of pods/status, as upstream's PatchPodStatus.
func (s *Scheduler) patchPodStatus(ctx context.Context, pod *v1.Pod, oldStatus, newStatus *v1.PodStatus) error {
	oldData, err := json.Marshal(v1.Pod{Status: *oldStatus})
	if err != nil {
		return fmt.Errorf("marshal old status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	newData, err := json.Marshal(v1.Pod{Status: *newStatus})
	if err != nil {
		return fmt.Errorf("marshal new status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, &v1.Pod{})
	if err != nil {
		return fmt.Errorf("create status patch for pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if string(patch) == "{}" {
		return nil
	}
	_, err = s.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

// patchAnnotations sets (or, for nil values, removes) the pod's
// annotations with a JSON merge patch, when any differs from what the pod
// already has. pods/status ignores metadata in klab's API server, so the
// annotations need this write of their own.
func (s *Scheduler) patchAnnotations(ctx context.Context, pod *v1.Pod, annotations map[string]*string) error {
	patch := map[string]any{}
	for k, v := range annotations {
		cur, ok := pod.Annotations[k]
		switch {
		case v == nil && ok:
			patch[k] = nil
		case v != nil && (!ok || cur != *v):
			patch[k] = *v
		}
	}
	if len(patch) == 0 {
		return nil
	}
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": patch}})
	if err != nil {
		return fmt.Errorf("marshal annotations of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	_, err = s.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, data, metav1.PatchOptions{})
	return err
}
