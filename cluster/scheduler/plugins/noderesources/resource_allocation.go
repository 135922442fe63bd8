package noderesources

import (
	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

// resourceSpec is a resource a scoring strategy looks at, and its weight.
type resourceSpec struct {
	Name   v1.ResourceName
	Weight int64
}

// defaultResources are upstream's defaults for both score strategies: cpu
// and memory, weight 1 each.
var defaultResources = []resourceSpec{{Name: v1.ResourceCPU, Weight: 1}, {Name: v1.ResourceMemory, Weight: 1}}

// resourceAllocationScorer is what LeastAllocated and BalancedAllocation
// share: which resources they read and how they count requests.
type resourceAllocationScorer struct {
	resources []resourceSpec
	// useRequested counts the pods' actual requests. Otherwise a container
	// that requests no cpu (memory) counts as 100m (200Mi), so that a node
	// full of such pods does not look empty (NonZeroRequested).
	useRequested bool
	// scorer turns, per resource, the node's requests with the pod
	// (requested), without it (allocated) and its allocatable into a score.
	// A resource with allocatable 0 has all three 0 and is to be skipped.
	scorer func(requested, allocated, allocatable []int64) int64
}

// podRequests returns the pod's request for each scored resource.
func (r *resourceAllocationScorer) podRequests(pod *v1.Pod) []int64 {
	req := framework.NewResource(framework.PodRequests(pod))
	if !r.useRequested {
		// Only cpu and memory have non-zero defaults.
		req.MilliCPU, req.Memory = framework.PodNonZeroRequests(pod)
	}
	out := make([]int64, len(r.resources))
	for i, res := range r.resources {
		out[i] = quantity(req, res.Name)
	}
	return out
}

// score gathers the three vectors for the node and applies the scorer.
func (r *resourceAllocationScorer) score(nodeInfo *framework.NodeInfo, podRequests []int64) int64 {
	n := len(r.resources)
	requested, allocated, allocatable := make([]int64, n), make([]int64, n), make([]int64, n)
	onNode := nodeInfo.NonZeroRequested
	if r.useRequested {
		onNode = nodeInfo.Requested
	}
	for i, res := range r.resources {
		cpuOrMemory := res.Name == v1.ResourceCPU || res.Name == v1.ResourceMemory
		// An extended resource the pod does not ask for does not count.
		if !cpuOrMemory && res.Name != v1.ResourceEphemeralStorage && podRequests[i] == 0 {
			continue
		}
		capacity := quantity(nodeInfo.Allocatable, res.Name)
		if capacity == 0 {
			continue
		}
		used := quantity(nodeInfo.Requested, res.Name)
		if cpuOrMemory {
			used = quantity(onNode, res.Name)
		}
		allocatable[i], allocated[i], requested[i] = capacity, used, used+podRequests[i]
	}
	return r.scorer(requested, allocated, allocatable)
}

func quantity(r *framework.Resource, name v1.ResourceName) int64 {
	switch name {
	case v1.ResourceCPU:
		return r.MilliCPU
	case v1.ResourceMemory:
		return r.Memory
	case v1.ResourceEphemeralStorage:
		return r.EphemeralStorage
	default:
		return r.ScalarResources[name]
	}
}
