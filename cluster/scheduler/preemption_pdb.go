package scheduler

import (
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// PodDisruptionBudgets in preemption, as upstream's DefaultPreemption
// weighs them: preemption may break a budget, but only as a last resort.
// On a node, the pods whose eviction would take a budget below zero are
// reprieved first, and of all candidate nodes the one with the fewest such
// violations wins before any priority is compared.

// filterPodsWithPDBViolation splits pods, taken in the order given (most
// important first), into those whose eviction would exceed a matching
// budget's disruptionsAllowed once the pods before them are evicted too,
// and the rest. A budget counts a pod already in its disruptedPods as
// evicted (the API server has accounted for it), and a budget with an
// empty selector matches nothing.
func filterPodsWithPDBViolation(pods []*v1.Pod, pdbs []*policyv1.PodDisruptionBudget) (violating, nonViolating []*v1.Pod) {
	allowed := make([]int32, len(pdbs))
	for i, pdb := range pdbs {
		allowed[i] = pdb.Status.DisruptionsAllowed
	}
	for _, pod := range pods {
		violates := false
		for i, pdb := range pdbs {
			if len(pod.Labels) == 0 || pdb.Namespace != pod.Namespace {
				continue
			}
			selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			if err != nil || selector.Empty() || !selector.Matches(labels.Set(pod.Labels)) {
				continue
			}
			if _, done := pdb.Status.DisruptedPods[pod.Name]; done {
				continue
			}
			allowed[i]--
			if allowed[i] < 0 {
				violates = true
			}
		}
		if violates {
			violating = append(violating, pod)
		} else {
			nonViolating = append(nonViolating, pod)
		}
	}
	return violating, nonViolating
}

// moreImportantPod is upstream's ordering of potential victims: higher
// priority first, then the pod that started earlier.
func moreImportantPod(a, b *v1.Pod) bool {
	if pa, pb := podPriority(a), podPriority(b); pa != pb {
		return pa > pb
	}
	return podStartTime(a).Before(podStartTime(b))
}

// podStartTime is when the pod started, or its creation time before the
// kubelet has said.
func podStartTime(pod *v1.Pod) *metav1.Time {
	if pod.Status.StartTime != nil {
		return pod.Status.StartTime
	}
	return &pod.CreationTimestamp
}
