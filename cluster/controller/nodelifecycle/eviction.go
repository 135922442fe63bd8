package nodelifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// matchingTolerations reports whether every taint is tolerated, and by
// which tolerations (the first match of each taint).
func matchingTolerations(taints []v1.Taint, tolerations []v1.Toleration) (bool, []v1.Toleration) {
	var used []v1.Toleration
	logger := klog.Background()
	for i := range taints {
		tolerated := false
		for j := range tolerations {
			if tolerations[j].ToleratesTaint(logger, &taints[i], false) {
				used = append(used, tolerations[j])
				tolerated = true
				break
			}
		}
		if !tolerated {
			return false, nil
		}
	}
	return true, used
}

// minTolerationTime is the shortest tolerationSeconds of the tolerations,
// zero if there are none (or one is not positive), and -1 if they all
// tolerate forever.
func minTolerationTime(tolerations []v1.Toleration) time.Duration {
	if len(tolerations) == 0 {
		return 0
	}
	least := int64(math.MaxInt64)
	for _, t := range tolerations {
		if t.TolerationSeconds == nil {
			continue
		}
		if *t.TolerationSeconds <= 0 {
			return 0
		}
		least = min(least, *t.TolerationSeconds)
	}
	if least == math.MaxInt64 {
		return -1
	}
	return time.Duration(least) * time.Second
}

// evict deletes the pod whose eviction is due, first marking it with a
// DisruptionTarget condition so that its owner can tell why it went.
func (tc *TaintEvictionController) evict(ctx context.Context, key string) error {
	if !tc.schedule.isPending(key) {
		return nil // called off after it fired
	}
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key this controller made; nothing to retry
	}
	ref := types.NamespacedName{Namespace: ns, Name: name}
	if tc.deletions.NumRequeues(key) == 0 {
		tc.logger.Info("Deleting pod", "pod", key)
		tc.recorder.Eventf(podRef(ref), v1.EventTypeNormal, "TaintManagerEviction", "Marking for deletion Pod %s", key)
	}
	pod, err := tc.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	newStatus := pod.Status.DeepCopy()
	if updatePodCondition(newStatus, v1.PodCondition{
		Type:    v1.DisruptionTarget,
		Status:  v1.ConditionTrue,
		Reason:  "DeletionByTaintManager",
		Message: "Taint manager: deleting due to NoExecute taint",
	}, tc.clock.Now()) {
		if err := patchPodStatus(ctx, tc.client, pod, *newStatus); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	if err := tc.client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	tc.observe(Transition{Kind: TransitionPodEvicted, Node: pod.Spec.NodeName, Pod: key})
	return nil
}

// patchPodStatus sends the difference between the pod's status and
// newStatus as a strategic merge patch of the status subresource, guarded
// by the pod's UID so that a new pod of the same name is left alone.
func patchPodStatus(ctx context.Context, client kubernetes.Interface, pod *v1.Pod, newStatus v1.PodStatus) error {
	oldData, err := json.Marshal(v1.Pod{Status: pod.Status})
	if err != nil {
		return fmt.Errorf("encode pod status: %w", err)
	}
	newData, err := json.Marshal(v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: pod.UID}, Status: newStatus})
	if err != nil {
		return fmt.Errorf("encode pod status: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, v1.Pod{})
	if err != nil {
		return fmt.Errorf("make pod status patch: %w", err)
	}
	_, err = client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}
