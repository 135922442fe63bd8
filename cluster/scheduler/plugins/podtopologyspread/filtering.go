package podtopologyspread

import (
	"context"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

const preFilterStateKey framework.StateKey = "PreFilter" + Name

// preFilterState is, per DoNotSchedule constraint, how many matching pods
// each domain holds, computed once over the whole snapshot.
type preFilterState struct {
	Constraints []topologySpreadConstraint
	// TpValueToMatchNum[i] maps each eligible domain of Constraints[i]
	// (a value of its topology key) to the number of matching pods.
	TpValueToMatchNum []map[string]int
	// MinMatchNum[i] is the fewest matching pods in any eligible domain of
	// Constraints[i]: the "global minimum" the skew is measured from.
	MinMatchNum []int
}

// Clone returns the state itself: it is never changed after PreFilter
// (klab's framework has no PreFilter extensions that would add or remove
// pods hypothetically, as upstream's preemption does).
func (s *preFilterState) Clone() framework.StateData { return s }

// PreFilter counts, over all nodes, the pods matching each DoNotSchedule
// constraint per domain. A node counts only if it has every constraint's
// topology key and passes the constraint's node inclusion policies. The
// plugin asks to be skipped when the pod has no such constraint.
func (pl *PodTopologySpread) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) *framework.Status {
	constraints, err := pl.constraintsFor(pod, v1.DoNotSchedule)
	if err != nil {
		return framework.AsStatus(fmt.Errorf("obtaining pod's hard topology spread constraints: %w", err))
	}
	if len(constraints) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	s := &preFilterState{
		Constraints:       constraints,
		TpValueToMatchNum: make([]map[string]int, len(constraints)),
		MinMatchNum:       make([]int, len(constraints)),
	}
	for i := range constraints {
		s.TpValueToMatchNum[i] = make(map[string]int)
	}
	// As upstream, a term that fails to parse simply does not match.
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	for _, nodeInfo := range nodes {
		node := nodeInfo.Node()
		if node == nil || !nodeLabelsMatchSpreadConstraints(node.Labels, constraints) {
			continue
		}
		for i := range constraints {
			c := &constraints[i]
			if !c.matchNodeInclusionPolicies(pod, node, required) {
				continue
			}
			value := node.Labels[c.TopologyKey]
			s.TpValueToMatchNum[i][value] += countPodsMatchSelector(nodeInfo.Pods, c.Selector, pod.Namespace)
		}
	}
	for i, domains := range s.TpValueToMatchNum {
		// With no eligible domain the minimum stays huge, so that no skew
		// can exceed maxSkew, as upstream's critical paths behave.
		s.MinMatchNum[i] = math.MaxInt32
		for _, n := range domains {
			s.MinMatchNum[i] = min(s.MinMatchNum[i], n)
		}
	}
	state.Write(preFilterStateKey, s)
	return nil
}

// minMatchNum is the global minimum for constraint i, taking minDomains
// into account: with fewer eligible domains than minDomains, the missing
// domains count as empty, so the minimum is 0.
func (s *preFilterState) minMatchNum(i int) int {
	if len(s.TpValueToMatchNum[i]) < int(s.Constraints[i].MinDomains) {
		return 0
	}
	return s.MinMatchNum[i]
}

// Filter checks every DoNotSchedule constraint:
//
//	matching pods in the node's domain + 1 if the pod matches itself
//	  - global minimum <= maxSkew
//
// A node without the topology key is UnschedulableAndUnresolvable; a skew
// too large is Unschedulable, as evicting pods could lower it.
func (pl *PodTopologySpread) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	node := nodeInfo.Node()
	if node == nil {
		return framework.AsStatus(fmt.Errorf("node not found"))
	}
	data, err := state.Read(preFilterStateKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	s, ok := data.(*preFilterState)
	if !ok {
		return framework.AsStatus(fmt.Errorf("%s: cycle state holds %T, not the PreFilter state", Name, data))
	}
	podLabels := labels.Set(pod.Labels)
	for i, c := range s.Constraints {
		value, ok := node.Labels[c.TopologyKey]
		if !ok {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeLabelNotMatch)
		}
		selfMatch := 0
		if c.Selector.Matches(podLabels) {
			selfMatch = 1
		}
		skew := s.TpValueToMatchNum[i][value] + selfMatch - s.minMatchNum(i)
		if skew > int(c.MaxSkew) {
			return framework.NewStatus(framework.Unschedulable, ErrReasonConstraintsNotMatch)
		}
	}
	return nil
}
