package disruption

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	pdbhelper "k8s.io/component-helpers/apps/poddisruptionbudget"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
)

// deletionTimeout is how long a Pod the API server let an eviction take
// is assumed to be on its way out (upstream's DeletionTimeout). Past it,
// a Pod still there counts again.
const deletionTimeout = 2 * time.Minute

// sync recomputes one budget's status. When the numbers cannot be worked
// out (a Pod's owner is gone), the budget allows no disruption until they
// can, as upstream's failSafe has it.
func (dc *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // a malformed key never becomes valid
	}
	pdb, err := dc.pdbLister.PodDisruptionBudgets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	recheck, err := dc.trySync(ctx, pdb)
	if err == nil && recheck > 0 {
		// A granted eviction whose Pod is still there stops being
		// discounted at its deadline: look again then.
		return controllerutil.RequeueAfter(recheck)
	}
	if err == nil || apierrors.IsConflict(err) {
		return err
	}
	dc.logger.Info("failed to sync budget; it allows no disruption until it can be", "podDisruptionBudget", key, "err", err)
	return dc.failSafe(ctx, pdb, err)
}

// trySync writes the budget's status and says when to look again, if a
// granted eviction's deadline is ahead.
func (dc *Controller) trySync(ctx context.Context, pdb *policyv1.PodDisruptionBudget) (time.Duration, error) {
	pods, err := dc.podsFor(pdb)
	if err != nil {
		dc.recorder.Eventf(pdb, corev1.EventTypeWarning, "NoPods", "Failed to get pods: %v", err)
		return 0, err
	}
	if len(pods) == 0 {
		dc.recorder.Eventf(pdb, corev1.EventTypeNormal, "NoPods", "No matching pods found")
	}
	expected, desired, unmanaged, err := dc.expectedPodCount(pdb, pods)
	if err != nil {
		dc.recorder.Eventf(pdb, corev1.EventTypeWarning, "CalculateExpectedPodCountFailed", "Failed to calculate the number of expected pods: %v", err)
		return 0, err
	}
	if len(unmanaged) > 0 {
		dc.recorder.Eventf(pdb, corev1.EventTypeWarning, "UnmanagedPods",
			"Pods selected by this PodDisruptionBudget (selector: %v) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value.",
			pdb.Spec.Selector)
	}
	now := time.Now()
	disrupted, recheck := dc.disruptedPodMap(pods, pdb, now)
	healthy := dc.countHealthy(pods, disrupted, now)
	if err := dc.updateStatus(ctx, pdb, healthy, desired, expected, disrupted); err != nil {
		return 0, err
	}
	if recheck != nil {
		return max(recheck.Sub(now), time.Millisecond), nil
	}
	return 0, nil
}

// podsFor returns the Pods of the budget's namespace that its selector
// matches.
func (dc *Controller) podsFor(pdb *policyv1.PodDisruptionBudget) ([]*corev1.Pod, error) {
	selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return nil, err
	}
	return dc.podLister.Pods(pdb.Namespace).List(selector)
}

// expectedPodCount returns how many Pods the budget should see and how
// many of them must be healthy. An integer minAvailable counts the Pods
// there are; a percentage, or a maxUnavailable, is taken of the replica
// counts of the Pods' owners, so a budget stays right while its Pods are
// being replaced.
func (dc *Controller) expectedPodCount(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) (expected, desired int32, unmanaged []string, err error) {
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		if expected, unmanaged, err = dc.expectedScale(pdb, pods); err != nil {
			return 0, 0, nil, err
		}
		maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, 0, nil, err
		}
		desired = max(expected-int32(maxUnavailable), 0)
	case pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.Int:
		desired = pdb.Spec.MinAvailable.IntVal
		expected = int32(len(pods))
	case pdb.Spec.MinAvailable != nil:
		if expected, unmanaged, err = dc.expectedScale(pdb, pods); err != nil {
			return 0, 0, nil, err
		}
		minAvailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(expected), true)
		if err != nil {
			return 0, 0, nil, err
		}
		desired = int32(minAvailable)
	}
	return expected, desired, unmanaged, nil
}

// expectedScale adds up the replica counts of the controllers of the
// Pods, each controller once. A Pod of a Deployment counts through the
// Deployment, not its ReplicaSet, so a rollout does not double it. Pods
// without a controller are returned as unmanaged.
func (dc *Controller) expectedScale(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) (int32, []string, error) {
	scales := map[types.UID]int32{}
	var unmanaged []string
	for _, pod := range pods {
		if controllerutil.IsPodTerminal(pod) {
			continue
		}
		ref := metav1.GetControllerOf(pod)
		if ref == nil {
			unmanaged = append(unmanaged, pod.Name)
			continue
		}
		uid, scale, found := dc.controllerScale(pod.Namespace, ref)
		if !found {
			return 0, nil, fmt.Errorf("found no controllers for pod %q", pod.Name)
		}
		scales[uid] = scale
	}
	var total int32
	for _, s := range scales {
		total += s
	}
	return total, unmanaged, nil
}

// controllerScale finds the controller a reference names and its desired
// replicas, as upstream's finders do for the kinds klab serves.
func (dc *Controller) controllerScale(namespace string, ref *metav1.OwnerReference) (types.UID, int32, bool) {
	switch ref.Kind {
	case "ReplicaSet":
		rs, err := dc.rsLister.ReplicaSets(namespace).Get(ref.Name)
		if err != nil || rs.UID != ref.UID {
			return "", 0, false
		}
		if owner := metav1.GetControllerOf(rs); owner != nil && owner.Kind == "Deployment" {
			d, err := dc.deploymentLister.Deployments(namespace).Get(owner.Name)
			if err != nil || d.UID != owner.UID {
				return "", 0, false
			}
			return d.UID, replicas(d.Spec.Replicas), true
		}
		return rs.UID, replicas(rs.Spec.Replicas), true
	case "StatefulSet":
		set, err := dc.setLister.StatefulSets(namespace).Get(ref.Name)
		if err != nil || set.UID != ref.UID {
			return "", 0, false
		}
		return set.UID, replicas(set.Spec.Replicas), true
	}
	return "", 0, false
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// disruptedPodMap keeps the granted evictions whose Pods are still there,
// not yet terminating and within deletionTimeout; it returns the earliest
// of their deadlines.
func (dc *Controller) disruptedPodMap(pods []*corev1.Pod, pdb *policyv1.PodDisruptionBudget, now time.Time) (map[string]metav1.Time, *time.Time) {
	result := map[string]metav1.Time{}
	var recheck *time.Time
	if pdb.Status.DisruptedPods == nil {
		return result, nil
	}
	timeout := dc.speed.Scale(deletionTimeout)
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		when, found := pdb.Status.DisruptedPods[pod.Name]
		if !found {
			continue
		}
		deadline := when.Add(timeout)
		if deadline.Before(now) {
			dc.recorder.Eventf(pod, corev1.EventTypeWarning, "NotDeleted", "Pod was expected by PDB %s/%s to be deleted but it wasn't", pdb.Namespace, pdb.Name)
			continue
		}
		if recheck == nil || deadline.Before(*recheck) {
			recheck = &deadline
		}
		result[pod.Name] = when
	}
	return result, recheck
}

// countHealthy counts the Ready Pods that are neither terminating nor
// granted an eviction.
func (dc *Controller) countHealthy(pods []*corev1.Pod, disrupted map[string]metav1.Time, now time.Time) int32 {
	var healthy int32
	timeout := dc.speed.Scale(deletionTimeout)
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if when, found := disrupted[pod.Name]; found && when.Add(timeout).After(now) {
			continue
		}
		if controllerutil.IsPodReady(pod) {
			healthy++
		}
	}
	return healthy
}

// updateStatus writes the budget's status when anything in it changed.
func (dc *Controller) updateStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget, healthy, desired, expected int32, disrupted map[string]metav1.Time) error {
	allowed := healthy - desired
	if expected <= 0 || allowed <= 0 {
		allowed = 0
	}
	s := &pdb.Status
	if s.CurrentHealthy == healthy && s.DesiredHealthy == desired && s.ExpectedPods == expected && s.DisruptionsAllowed == allowed &&
		apiequality.Semantic.DeepEqual(disrupted, s.DisruptedPods) && s.ObservedGeneration == pdb.Generation && pdbhelper.ConditionsAreUpToDate(pdb) {
		return nil
	}
	updated := pdb.DeepCopy()
	updated.Status = policyv1.PodDisruptionBudgetStatus{
		CurrentHealthy: healthy, DesiredHealthy: desired, ExpectedPods: expected, DisruptionsAllowed: allowed,
		DisruptedPods: disrupted, ObservedGeneration: pdb.Generation, Conditions: updated.Status.Conditions,
	}
	pdbhelper.UpdateDisruptionAllowedCondition(updated)
	_, err := dc.client.PolicyV1().PodDisruptionBudgets(pdb.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	return err
}

// failSafe allows no disruption and says why in the budget's condition.
func (dc *Controller) failSafe(ctx context.Context, pdb *policyv1.PodDisruptionBudget, cause error) error {
	updated := pdb.DeepCopy()
	updated.Status.DisruptionsAllowed = 0
	if updated.Status.Conditions == nil {
		updated.Status.Conditions = []metav1.Condition{}
	}
	apimeta.SetStatusCondition(&updated.Status.Conditions, metav1.Condition{
		Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse,
		Reason: policyv1.SyncFailedReason, Message: cause.Error(), ObservedGeneration: updated.Status.ObservedGeneration,
	})
	if _, err := dc.client.PolicyV1().PodDisruptionBudgets(pdb.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return cause
}
