package queue

import (
	"reflect"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

// MoveAllToActiveOrBackoffQueue gives every unschedulable pod accepted by
// preCheck (all, when nil) another try after a cluster event that may
// have made room for it. Pods still backing off go to podBackoffQ.
func (q *PriorityQueue) MoveAllToActiveOrBackoffQueue(preCheck func(*v1.Pod) bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, p := range q.unschedulablePods {
		if preCheck == nil || preCheck(p.Pod) {
			q.move(p)
		}
	}
	q.moveRequestCycle = q.schedulingCycle
}

// AssignedPodAdded is called when a pod is seen bound to a node: the
// unschedulable pods whose required pod affinity it satisfies may fit now.
func (q *PriorityQueue) AssignedPodAdded(pod *v1.Pod) {
	q.MoveAllToActiveOrBackoffQueue(func(p *v1.Pod) bool { return affinityTermMatches(p, pod) })
}

// AssignedPodUpdated is called when a bound pod changes: if it asks for
// less than before, every unschedulable pod may fit now; otherwise only
// those whose required pod affinity it satisfies (its labels may have
// changed).
func (q *PriorityQueue) AssignedPodUpdated(oldPod, newPod *v1.Pod) {
	if requestsShrank(oldPod, newPod) {
		q.MoveAllToActiveOrBackoffQueue(nil)
		return
	}
	q.AssignedPodAdded(newPod)
}

// requestsShrank reports whether newPod requests less of any resource
// than oldPod.
func requestsShrank(oldPod, newPod *v1.Pod) bool {
	after := framework.PodRequests(newPod)
	for name, before := range framework.PodRequests(oldPod) {
		if now, ok := after[name]; !ok || now.Cmp(before) < 0 {
			return true
		}
	}
	return false
}

// affinityTermMatches reports whether assigned satisfies one of pending's
// required pod affinity terms. A term with a namespace selector is taken
// to match any namespace: the queue has no namespace labels, and a needless
// retry costs less than a missed one.
func affinityTermMatches(pending, assigned *v1.Pod) bool {
	a := pending.Spec.Affinity
	if a == nil || a.PodAffinity == nil {
		return false
	}
	for _, term := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if term.NamespaceSelector == nil {
			namespaces := term.Namespaces
			if len(namespaces) == 0 {
				namespaces = []string{pending.Namespace}
			}
			if !slices.Contains(namespaces, assigned.Namespace) {
				continue
			}
		}
		sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		if err != nil {
			continue
		}
		if sel.Matches(labels.Set(assigned.Labels)) {
			return true
		}
	}
	return false
}

// NodeSchedulingPropertiesChanged reports whether a node update may let
// an unschedulable pod fit: its allocatable, labels, taints,
// unschedulable flag or conditions changed (heartbeat times aside).
func NodeSchedulingPropertiesChanged(oldNode, newNode *v1.Node) bool {
	if oldNode.Spec.Unschedulable != newNode.Spec.Unschedulable {
		return true
	}
	if !reflect.DeepEqual(oldNode.Status.Allocatable, newNode.Status.Allocatable) ||
		!reflect.DeepEqual(oldNode.Labels, newNode.Labels) ||
		!reflect.DeepEqual(oldNode.Spec.Taints, newNode.Spec.Taints) {
		return true
	}
	return !slices.Equal(conditionStatuses(oldNode), conditionStatuses(newNode))
}

func conditionStatuses(n *v1.Node) []string {
	out := make([]string, 0, len(n.Status.Conditions))
	for _, c := range n.Status.Conditions {
		out = append(out, string(c.Type)+"="+string(c.Status))
	}
	return out
}

// klabAnnotationPrefix marks the scheduler's own explanations on a pod.
const klabAnnotationPrefix = "klab.dev/"

// podUpdated reports whether a pod changed in a way that may change where
// it fits: anything but its status, resource version, generation, managed
// fields and the scheduler's own klab.dev/ annotations (writing those must
// not retry the pod the write explains).
func podUpdated(oldPod, newPod *v1.Pod) bool {
	strip := func(p *v1.Pod) *v1.Pod {
		c := p.DeepCopy()
		c.ResourceVersion = ""
		c.Generation = 0
		c.ManagedFields = nil
		c.Status = v1.PodStatus{}
		for k := range c.Annotations {
			if strings.HasPrefix(k, klabAnnotationPrefix) {
				delete(c.Annotations, k)
			}
		}
		if len(c.Annotations) == 0 {
			c.Annotations = nil
		}
		return c
	}
	return !reflect.DeepEqual(strip(oldPod), strip(newPod))
}
