package scheduler

import (
	"context"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

// Preemption, as upstream's DefaultPreemption PostFilter plugin does it
// (klab's framework has no PostFilter point, so the scheduling cycle calls
// it directly when a pod fits nowhere): on each node that rejected the pod
// for a reason removing pods could cure, take away every pod of lower
// priority, check the pod fits, then give back as many of them as still
// let it fit, highest priority first. The node whose victims matter least
// is chosen; they are deleted, and the pod is nominated to the node until
// the space is free.
//
// PodDisruptionBudgets are weighed as upstream's (preemption_pdb.go).
//
// Limits against upstream: the PreFilter state of inter-pod affinity and
// topology spread is not updated for the removed pods.

// candidate is a node on which preemption would make the pod fit.
type candidate struct {
	node    string
	victims []*v1.Pod
	// numPDBViolations counts the victims whose eviction breaks a
	// PodDisruptionBudget.
	numPDBViolations int
}

func podPriority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// eligibleToPreempt: a pod whose policy is Never waits instead.
func eligibleToPreempt(pod *v1.Pod) bool {
	return pod.Spec.PreemptionPolicy == nil || *pod.Spec.PreemptionPolicy != v1.PreemptNever
}

// Upstream's words for a node on which preemption cannot help.
const (
	preemptionNotHelpful = "Preemption is not helpful for scheduling"
	noPreemptionVictims  = "No preemption victims found for incoming pod"
)

// findCandidates tries each node the filters rejected as Unschedulable
// (not UnschedulableAndUnresolvable: no eviction cures a taint or a
// selector). Beside the candidates it returns why each other node is not
// one, as upstream's dry run reports it: preemptionNotHelpful for a node
// it did not try, noPreemptionVictims for one with no pod of lower
// priority, and the filters' own verdict for one on which even removing
// them all would not let the pod fit.
func (a *algorithm) findCandidates(ctx context.Context, state *framework.CycleState, pod *v1.Pod, rejected map[string]*framework.Status, pdbs []*policyv1.PodDisruptionBudget) ([]candidate, map[string]*framework.Status) {
	nodes, err := a.snapshot.List()
	if err != nil {
		return nil, nil
	}
	prio := podPriority(pod)
	var out []candidate
	why := map[string]*framework.Status{}
	for _, ni := range nodes {
		st, ok := rejected[ni.Node().Name]
		if !ok || st.Code() != framework.Unschedulable {
			why[ni.Node().Name] = framework.NewStatus(framework.UnschedulableAndUnresolvable, preemptionNotHelpful)
			continue
		}
		trial := ni.Clone()
		var lower []*v1.Pod
		for _, pi := range ni.Pods {
			if podPriority(pi.Pod) < prio && pi.Pod.DeletionTimestamp == nil {
				lower = append(lower, pi.Pod)
			}
		}
		if len(lower) == 0 {
			why[ni.Node().Name] = framework.NewStatus(framework.UnschedulableAndUnresolvable, noPreemptionVictims)
			continue
		}
		for _, p := range lower {
			_ = trial.RemovePod(p)
		}
		if s, _ := a.fwk.RunFilterPlugins(ctx, state, pod, trial); !s.IsSuccess() {
			why[ni.Node().Name] = s
			continue
		}
		// Reprieve as many as still let the pod fit: first those whose
		// eviction would break a PodDisruptionBudget, then the rest, the
		// most important first within each group.
		sort.SliceStable(lower, func(i, j int) bool { return moreImportantPod(lower[i], lower[j]) })
		violating, nonViolating := filterPodsWithPDBViolation(lower, pdbs)
		c := candidate{node: ni.Node().Name}
		reprieve := func(p *v1.Pod) bool {
			trial.AddPod(p)
			if s, _ := a.fwk.RunFilterPlugins(ctx, state, pod, trial); !s.IsSuccess() {
				_ = trial.RemovePod(p)
				c.victims = append(c.victims, p)
				return false
			}
			return true
		}
		for _, p := range violating {
			if !reprieve(p) {
				c.numPDBViolations++
			}
		}
		for _, p := range nonViolating {
			reprieve(p)
		}
		out = append(out, c)
	}
	return out, why
}

// pickCandidate chooses as upstream's pickOneNodeForPreemption does, in
// order: the fewest PodDisruptionBudget violations, the lowest
// highest-victim priority, the smallest sum of victim priorities, the
// fewest victims, then the node name for a stable answer.
func pickCandidate(cands []candidate) *candidate {
	if len(cands) == 0 {
		return nil
	}
	highest := func(c candidate) int32 {
		h := int32(-1 << 31)
		for _, v := range c.victims {
			h = max(h, podPriority(v))
		}
		return h
	}
	sum := func(c candidate) int64 {
		var s int64
		for _, v := range c.victims {
			// Shifted so that negative priorities do not reward more victims.
			s += int64(podPriority(v)) + 1<<31 + 1
		}
		return s
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.numPDBViolations != b.numPDBViolations {
			return a.numPDBViolations < b.numPDBViolations
		}
		if highest(a) != highest(b) {
			return highest(a) < highest(b)
		}
		if sum(a) != sum(b) {
			return sum(a) < sum(b)
		}
		if len(a.victims) != len(b.victims) {
			return len(a.victims) < len(b.victims)
		}
		return a.node < b.node
	})
	return &cands[0]
}

// preempt runs preemption for a pod that fit nowhere and returns the
// nominated node, or "" when preemption cannot help; then it sets
// fitErr.PostFilterMsg to upstream's account of why, which the pod's
// condition and FailedScheduling event end with.
func (s *Scheduler) preempt(ctx context.Context, state *framework.CycleState, pod *v1.Pod, fitErr *FitError) (string, error) {
	switch {
	case !eligibleToPreempt(pod):
		fitErr.PostFilterMsg = "preemption: not eligible due to preemptionPolicy=Never."
		return "", nil
	case s.awaitingVictims(pod):
		fitErr.PostFilterMsg = "preemption: not eligible due to a terminating pod on the nominated node."
		return "", nil
	}
	pdbs, err := s.pdbLister.List(labels.Everything())
	if err != nil {
		return "", fmt.Errorf("list PodDisruptionBudgets: %w", err)
	}
	cands, why := s.algo.findCandidates(ctx, state, pod, fitErr.NodeToStatus, pdbs)
	c := pickCandidate(cands)
	if c == nil && why != nil {
		// As upstream: the dry run's verdict on every node, in a FitError
		// of its own. After a PreFilter rejection no node passed the
		// filters as Unschedulable, so none can be helped.
		pf := &FitError{NumAllNodes: fitErr.NumAllNodes, NodeToStatus: why}
		fitErr.PostFilterMsg = "preemption: " + pf.filterMessage()
		return "", nil
	}
	if c == nil {
		return "", nil // the snapshot could not be listed
	}
	for _, victim := range c.victims {
		// As upstream: the victim learns why it goes (DisruptionTarget),
		// then is deleted, and both pods' events say who took its place.
		newStatus := victim.Status.DeepCopy()
		if setPodCondition(newStatus, v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
			Reason: v1.PodReasonPreemptionByScheduler, Message: fmt.Sprintf("%s: preempting to accommodate a higher priority pod", SchedulerName)}, metav1.Now()) {
			if err := s.patchPodStatus(ctx, victim, &victim.Status, newStatus); err != nil {
				s.log.Info("could not mark preemption victim", "pod", victim.Namespace+"/"+victim.Name, "err", err)
			}
		}
		if err := s.client.CoreV1().Pods(victim.Namespace).Delete(ctx, victim.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &victim.UID}}); err != nil {
			return "", fmt.Errorf("preempt %s/%s: %w", victim.Namespace, victim.Name, err)
		}
		s.recorder.Eventf(victim, pod, v1.EventTypeNormal, "Preempted", "Preempting", "Preempted by pod %v on node %v", pod.UID, c.node)
	}
	newStatus := pod.Status.DeepCopy()
	newStatus.NominatedNodeName = c.node
	if err := s.patchPodStatus(ctx, pod, &pod.Status, newStatus); err != nil {
		return "", fmt.Errorf("nominate %s for %s/%s: %w", c.node, pod.Namespace, pod.Name, err)
	}
	s.log.Info("preempted", "pod", pod.Namespace+"/"+pod.Name, "node", c.node, "victims", len(c.victims))
	return c.node, nil
}

// awaitingVictims: a pod already nominated to a node where lower-priority
// pods are still terminating waits for them rather than preempting more,
// as upstream's PodEligibleToPreemptOthers.
func (s *Scheduler) awaitingVictims(pod *v1.Pod) bool {
	if latest, err := s.podLister.Pods(pod.Namespace).Get(pod.Name); err == nil && latest.UID == pod.UID {
		pod = latest
	}
	nominated := pod.Status.NominatedNodeName
	if nominated == "" {
		return false
	}
	ni, err := s.snapshot.Get(nominated)
	if err != nil || ni == nil {
		return false
	}
	for _, pi := range ni.Pods {
		if pi.Pod.DeletionTimestamp != nil && podPriority(pi.Pod) < podPriority(pod) {
			return true
		}
	}
	return false
}
