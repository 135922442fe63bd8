// Package noderesources holds the two plugins that look at cpu, memory and
// extended resources: NodeResourcesFit, which filters out nodes without
// room for the pod's requests and scores the rest with the LeastAllocated
// strategy, and NodeResourcesBalancedAllocation, which favours nodes whose
// cpu and memory use would be more even.
package noderesources

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

// Name is the Fit plugin's name in profiles and FailedScheduling messages.
const Name = "NodeResourcesFit"

const (
	preFilterStateKey framework.StateKey = "PreFilter" + Name
	preScoreStateKey  framework.StateKey = "PreScore" + Name
)

// Fit checks that a node has room for the pod's requests and scores nodes
// by how much they would have left (LeastAllocated).
type Fit struct{}

var (
	_ framework.PreFilterPlugin = &Fit{}
	_ framework.FilterPlugin    = &Fit{}
	_ framework.PreScorePlugin  = &Fit{}
	_ framework.ScorePlugin     = &Fit{}
)

// NewFit builds the plugin.
func NewFit(_ context.Context, _ framework.Handle) (framework.Plugin, error) {
	return &Fit{}, nil
}

// Name returns the plugin's name.
func (f *Fit) Name() string { return Name }

// preFilterState is the pod's requests, computed once.
type preFilterState struct {
	framework.Resource
}

// Clone returns the state itself: it is never changed after PreFilter.
func (s *preFilterState) Clone() framework.StateData { return s }

// PreFilter computes the pod's requests once: containers summed, the
// largest init container, sidecars, overhead (framework.PodRequests).
func (f *Fit) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	state.Write(preFilterStateKey, &preFilterState{Resource: *framework.NewResource(framework.PodRequests(pod))})
	return nil
}

// Filter rejects the node when one of the pod's requests exceeds what the
// node has left: allocatable minus the requests of the pods on it, assumed
// pods included. Every shortfall becomes a reason ("Insufficient cpu",
// "Too many pods"). The code is Unschedulable, as evicting pods could make
// room, unless a request exceeds the node's whole allocatable: then no
// eviction helps and the code is UnschedulableAndUnresolvable.
func (f *Fit) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	var request *framework.Resource
	if data, err := state.Read(preFilterStateKey); err == nil {
		s, ok := data.(*preFilterState)
		if !ok {
			return framework.AsStatus(fmt.Errorf("%s: cycle state holds %T, not the PreFilter state", Name, data))
		}
		request = &s.Resource
	} else {
		request = framework.NewResource(framework.PodRequests(pod))
	}
	insufficient := fitsRequest(request, nodeInfo)
	if len(insufficient) == 0 {
		return nil
	}
	code := framework.Unschedulable
	reasons := make([]string, 0, len(insufficient))
	for _, r := range insufficient {
		reasons = append(reasons, r.Reason)
		if r.Unresolvable {
			code = framework.UnschedulableAndUnresolvable
		}
	}
	return framework.NewStatus(code, reasons...)
}

// InsufficientResource is one resource the node lacks for the pod.
type InsufficientResource struct {
	ResourceName v1.ResourceName
	// Reason is upstream's wording: "Insufficient cpu", "Too many pods".
	Reason    string
	Requested int64
	Used      int64
	Capacity  int64
	// Unresolvable is set when the request exceeds the node's allocatable:
	// the pod would not fit even on the empty node.
	Unresolvable bool
}

// Fits returns what the node lacks to run the pod; empty means it fits.
func Fits(pod *v1.Pod, nodeInfo *framework.NodeInfo) []InsufficientResource {
	return fitsRequest(framework.NewResource(framework.PodRequests(pod)), nodeInfo)
}

func fitsRequest(request *framework.Resource, nodeInfo *framework.NodeInfo) []InsufficientResource {
	var out []InsufficientResource
	alloc, used := nodeInfo.Allocatable, nodeInfo.Requested

	// The pod count is checked even for a pod that requests nothing.
	if len(nodeInfo.Pods)+1 > alloc.AllowedPodNumber {
		out = append(out, InsufficientResource{
			ResourceName: v1.ResourcePods, Reason: "Too many pods",
			Requested: 1, Used: int64(len(nodeInfo.Pods)), Capacity: int64(alloc.AllowedPodNumber),
		})
	}
	check := func(name v1.ResourceName, reason string, want, used, capacity int64) {
		if want > 0 && want > capacity-used {
			out = append(out, InsufficientResource{
				ResourceName: name, Reason: reason,
				Requested: want, Used: used, Capacity: capacity,
				Unresolvable: want > capacity,
			})
		}
	}
	check(v1.ResourceCPU, "Insufficient cpu", request.MilliCPU, used.MilliCPU, alloc.MilliCPU)
	check(v1.ResourceMemory, "Insufficient memory", request.Memory, used.Memory, alloc.Memory)
	check(v1.ResourceEphemeralStorage, "Insufficient ephemeral-storage", request.EphemeralStorage, used.EphemeralStorage, alloc.EphemeralStorage)

	// Extended resources (example.com/gpu, hugepages-2Mi) in name order, so
	// that the message reads the same on every run; upstream walks a map.
	names := make([]v1.ResourceName, 0, len(request.ScalarResources))
	for name := range request.ScalarResources {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		check(name, fmt.Sprintf("Insufficient %v", name), request.ScalarResources[name],
			used.ScalarResources[name], alloc.ScalarResources[name])
	}
	return out
}

// preScoreState is the pod's requests for the scored resources, with the
// non-zero defaults for containers that request nothing.
type preScoreState struct {
	podRequests []int64
}

// Clone returns the state itself: it is never changed after PreScore.
func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore computes the pod's non-zero cpu and memory requests once.
func (f *Fit) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	state.Write(preScoreStateKey, &preScoreState{podRequests: leastAllocated.podRequests(pod)})
	return nil
}

// Score rates the node by the share of cpu and memory it would have left
// with the pod on it (LeastAllocated), 0..100.
func (f *Fit) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	var podRequests []int64
	if data, err := state.Read(preScoreStateKey); err == nil {
		s, ok := data.(*preScoreState)
		if !ok {
			return 0, framework.AsStatus(fmt.Errorf("%s: cycle state holds %T, not the PreScore state", Name, data))
		}
		podRequests = s.podRequests
	} else {
		podRequests = leastAllocated.podRequests(pod)
	}
	return leastAllocated.score(nodeInfo, podRequests), nil
}

// ScoreExtensions returns nil: LeastAllocated scores are already 0..100.
func (f *Fit) ScoreExtensions() framework.ScoreExtensions { return nil }
