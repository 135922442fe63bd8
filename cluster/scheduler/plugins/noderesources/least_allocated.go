package noderesources

import "github.com/klab-dev/klab/cluster/scheduler/framework"

// leastAllocated is NodeResourcesFit's default scoring strategy. It
// favours nodes with more left over, so that pods spread out.
var leastAllocated = &resourceAllocationScorer{
	resources: defaultResources,
	scorer:    leastResourceScorer(defaultResources),
}

// leastResourceScorer averages, weighted, each resource's share left
// free: (allocatable - requested) * 100 / allocatable.
func leastResourceScorer(resources []resourceSpec) func(requested, allocated, allocatable []int64) int64 {
	return func(requested, _, allocatable []int64) int64 {
		var nodeScore, weightSum int64
		for i := range requested {
			if allocatable[i] == 0 {
				continue
			}
			nodeScore += leastRequestedScore(requested[i], allocatable[i]) * resources[i].Weight
			weightSum += resources[i].Weight
		}
		if weightSum == 0 {
			return 0
		}
		return nodeScore / weightSum
	}
}

// leastRequestedScore is the share of capacity left free, 0..100; an
// over-committed resource scores 0.
func leastRequestedScore(requested, capacity int64) int64 {
	if capacity == 0 || requested > capacity {
		return 0
	}
	return (capacity - requested) * framework.MaxNodeScore / capacity
}
