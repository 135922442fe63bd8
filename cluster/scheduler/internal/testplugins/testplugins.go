// Package testplugins holds small plugins for the scheduler's own tests,
// so that the framework runner and the scheduling loop can be tested
// without the real plugins (cluster/scheduler/plugins). Each type
// implements only the extension points its name says.
package testplugins

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

// Spec returns a profile entry that builds p.
func Spec(p framework.Plugin, weight int64) framework.PluginSpec {
	return framework.PluginSpec{
		Name:    p.Name(),
		Factory: func(context.Context, framework.Handle) (framework.Plugin, error) { return p, nil },
		Weight:  weight,
	}
}

// Filter is a filter plugin that answers with Fn.
type Filter struct {
	PluginName string
	Fn         func(pod *v1.Pod, node *framework.NodeInfo) *framework.Status
}

var _ framework.FilterPlugin = (*Filter)(nil)

// Name returns PluginName.
func (f *Filter) Name() string { return f.PluginName }

// Filter calls Fn.
func (f *Filter) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	return f.Fn(pod, ni)
}

// PreFilterFilter is a plugin with PreFilter, answering PreFilterStatus,
// and Filter, answering with Fn.
type PreFilterFilter struct {
	PluginName      string
	PreFilterStatus *framework.Status
	Fn              func(pod *v1.Pod, node *framework.NodeInfo) *framework.Status
}

var (
	_ framework.PreFilterPlugin = (*PreFilterFilter)(nil)
	_ framework.FilterPlugin    = (*PreFilterFilter)(nil)
)

// Name returns PluginName.
func (f *PreFilterFilter) Name() string { return f.PluginName }

// PreFilter returns PreFilterStatus.
func (f *PreFilterFilter) PreFilter(context.Context, *framework.CycleState, *v1.Pod, []*framework.NodeInfo) *framework.Status {
	return f.PreFilterStatus
}

// Filter calls Fn.
func (f *PreFilterFilter) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	return f.Fn(pod, ni)
}

// Score is a score plugin that scores each node with Fn, and normalises
// with Normalize when that is set.
type Score struct {
	PluginName string
	Fn         func(node *framework.NodeInfo) int64
	Normalize  func(scores framework.NodeScoreList)
	// PreScoreStatus, when set, makes the plugin a PreScore plugin too
	// (see ScoreWithPreScore).
	PreScoreStatus *framework.Status
}

var _ framework.ScorePlugin = (*Score)(nil)

// Name returns PluginName.
func (s *Score) Name() string { return s.PluginName }

// Score calls Fn.
func (s *Score) Score(_ context.Context, _ *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	return s.Fn(ni), nil
}

// ScoreExtensions returns the plugin itself when it normalises.
func (s *Score) ScoreExtensions() framework.ScoreExtensions {
	if s.Normalize == nil {
		return nil
	}
	return s
}

// NormalizeScore calls Normalize.
func (s *Score) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *framework.Status {
	s.Normalize(scores)
	return nil
}

// ScoreWithPreScore is a Score plugin that also has PreScore, answering
// PreScoreStatus.
type ScoreWithPreScore struct{ *Score }

var _ framework.PreScorePlugin = ScoreWithPreScore{}

// PreScore returns PreScoreStatus.
func (s ScoreWithPreScore) PreScore(context.Context, *framework.CycleState, *v1.Pod, []*framework.NodeInfo) *framework.Status {
	return s.PreScoreStatus
}

// NormalizeToMax scales scores so that the highest is MaxNodeScore, as
// many upstream plugins do.
func NormalizeToMax(scores framework.NodeScoreList) {
	var highest int64
	for _, s := range scores {
		highest = max(highest, s.Score)
	}
	for i := range scores {
		if highest > 0 {
			scores[i].Score = scores[i].Score * framework.MaxNodeScore / highest
		}
	}
}

// Fit is a small NodeResourcesFit: it filters out nodes without room for
// the pod's cpu and memory requests (upstream's "Insufficient cpu") and
// scores the others by the share of cpu left free (LeastAllocated).
type Fit struct{}

var (
	_ framework.FilterPlugin = Fit{}
	_ framework.ScorePlugin  = Fit{}
)

// Name returns NodeResourcesFit.
func (Fit) Name() string { return "NodeResourcesFit" }

// Filter rejects a node without room for the pod's requests.
func (Fit) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	req := framework.NewResource(framework.PodRequests(pod))
	var reasons []string
	if ni.Allocatable.AllowedPodNumber > 0 && len(ni.Pods)+1 > ni.Allocatable.AllowedPodNumber {
		reasons = append(reasons, "Too many pods")
	}
	if req.MilliCPU > 0 && req.MilliCPU > ni.Allocatable.MilliCPU-ni.Requested.MilliCPU {
		reasons = append(reasons, fmt.Sprintf("Insufficient %v", v1.ResourceCPU))
	}
	if req.Memory > 0 && req.Memory > ni.Allocatable.Memory-ni.Requested.Memory {
		reasons = append(reasons, fmt.Sprintf("Insufficient %v", v1.ResourceMemory))
	}
	if len(reasons) > 0 {
		return framework.NewStatus(framework.Unschedulable, reasons...)
	}
	return nil
}

// Score is the share of the node's cpu left free after the pod, 0..100.
func (Fit) Score(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	cpu, _ := framework.PodNonZeroRequests(pod)
	alloc := ni.Allocatable.MilliCPU
	if alloc == 0 {
		return 0, nil
	}
	free := alloc - ni.NonZeroRequested.MilliCPU - cpu
	if free < 0 {
		return 0, nil
	}
	return free * framework.MaxNodeScore / alloc, nil
}

// ScoreExtensions returns nil: scores are already 0..100.
func (Fit) ScoreExtensions() framework.ScoreExtensions { return nil }

// NodeSelector is a small NodeAffinity: it rejects nodes whose labels do
// not match the pod's nodeSelector, with upstream's reason.
type NodeSelector struct{}

var _ framework.FilterPlugin = NodeSelector{}

// Name returns NodeAffinity.
func (NodeSelector) Name() string { return "NodeAffinity" }

// Filter rejects a node that lacks one of the selected labels.
func (NodeSelector) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	for k, v := range pod.Spec.NodeSelector {
		if ni.Node().Labels[k] != v {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) didn't match Pod's node affinity/selector")
		}
	}
	return nil
}
