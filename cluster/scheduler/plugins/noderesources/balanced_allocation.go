package noderesources

import (
	"context"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

// BalancedAllocationName is the BalancedAllocation plugin's name in
// profiles.
const BalancedAllocationName = "NodeResourcesBalancedAllocation"

const balancedAllocationPreScoreStateKey framework.StateKey = "PreScore" + BalancedAllocationName

// BalancedAllocation favours nodes whose cpu and memory use would become
// more even with the pod on them, so that a node does not run out of one
// while the other sits idle.
type BalancedAllocation struct{}

var (
	_ framework.PreScorePlugin = &BalancedAllocation{}
	_ framework.ScorePlugin    = &BalancedAllocation{}
)

// NewBalancedAllocation builds the plugin.
func NewBalancedAllocation(_ context.Context, _ framework.Handle) (framework.Plugin, error) {
	return &BalancedAllocation{}, nil
}

// Name returns the plugin's name.
func (ba *BalancedAllocation) Name() string { return BalancedAllocationName }

// balanced counts actual requests: the non-zero defaults would make a pod
// that requests nothing look like it unbalances a node.
var balanced = &resourceAllocationScorer{
	resources:    defaultResources,
	useRequested: true,
	scorer:       balancedResourceScorer,
}

type balancedAllocationPreScoreState struct {
	podRequests []int64
}

// Clone returns the state itself: it is never changed after PreScore.
func (s *balancedAllocationPreScoreState) Clone() framework.StateData { return s }

// PreScore computes the pod's requests once. A best-effort pod (no
// requests at all) cannot change any node's balance, and scoring it would
// pile such pods onto one node (kubernetes#129138), so the plugin skips it.
func (ba *BalancedAllocation) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	requests := balanced.podRequests(pod)
	if isBestEffort(requests) {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(balancedAllocationPreScoreStateKey, &balancedAllocationPreScoreState{podRequests: requests})
	return nil
}

func isBestEffort(requests []int64) bool {
	for _, r := range requests {
		if r != 0 {
			return false
		}
	}
	return true
}

// Score rates how much placing the pod improves the node's balance.
func (ba *BalancedAllocation) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	var requests []int64
	if data, err := state.Read(balancedAllocationPreScoreStateKey); err == nil {
		s, ok := data.(*balancedAllocationPreScoreState)
		if !ok {
			return 0, framework.AsStatus(fmt.Errorf("%s: cycle state holds %T, not the PreScore state", BalancedAllocationName, data))
		}
		requests = s.podRequests
	} else {
		requests = balanced.podRequests(pod)
		if isBestEffort(requests) {
			return 0, nil
		}
	}
	return balanced.score(nodeInfo, requests), nil
}

// ScoreExtensions returns nil: the scores are already within 50..100.
func (ba *BalancedAllocation) ScoreExtensions() framework.ScoreExtensions { return nil }

// balancedResourceScorer compares the node's balance with the pod and
// without it (upstream since v1.36, kubernetes#135573). Each balance score
// lies in 50..100, so their difference lies in -50..50; the result maps it
// onto 50..100: 75 when the pod changes nothing, 100 when it turns a
// perfectly unbalanced node into a balanced one, 50 for the reverse.
func balancedResourceScorer(requested, allocated, allocatable []int64) int64 {
	withPod := balancedResourceScore(requested, allocatable)
	withoutPod := balancedResourceScore(allocated, allocatable)
	return framework.MaxNodeScore/2 + (framework.MaxNodeScore/2+withPod-withoutPod)/2
}

// balancedResourceScore is (1 - std) * 100, std being the standard
// deviation of the resources' used fractions (each capped at 1). For two
// resources std is |f1 - f2| / 2, at most 0.5.
func balancedResourceScore(requested, allocatable []int64) int64 {
	var fractions []float64
	var total float64
	for i := range requested {
		if allocatable[i] == 0 {
			continue
		}
		f := min(float64(requested[i])/float64(allocatable[i]), 1)
		total += f
		fractions = append(fractions, f)
	}
	var std float64
	switch {
	case len(fractions) == 2:
		std = math.Abs((fractions[0] - fractions[1]) / 2)
	case len(fractions) > 2:
		mean := total / float64(len(fractions))
		var sum float64
		for _, f := range fractions {
			sum += (f - mean) * (f - mean)
		}
		std = math.Sqrt(sum / float64(len(fractions)))
	}
	return int64((1 - std) * float64(framework.MaxNodeScore))
}
