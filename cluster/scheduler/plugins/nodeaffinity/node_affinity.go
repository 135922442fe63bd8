// Package nodeaffinity matches nodes against a pod's spec.nodeSelector and
// node affinity: the required terms filter, the preferred terms score.
package nodeaffinity

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
	"github.com/klab-dev/klab/cluster/scheduler/plugins/helper"
)

// Name is the plugin's name in profiles and FailedScheduling messages.
const Name = "NodeAffinity"

// ErrReasonPod is upstream's reason for a node that fails the pod's
// nodeSelector or required node affinity.
const ErrReasonPod = "node(s) didn't match Pod's node affinity/selector"

const (
	preFilterStateKey framework.StateKey = "PreFilter" + Name
	preScoreStateKey  framework.StateKey = "PreScore" + Name
)

// NodeAffinity filters and scores nodes by the pod's node affinity.
type NodeAffinity struct{}

var (
	_ framework.PreFilterPlugin = &NodeAffinity{}
	_ framework.FilterPlugin    = &NodeAffinity{}
	_ framework.PreScorePlugin  = &NodeAffinity{}
	_ framework.ScorePlugin     = &NodeAffinity{}
)

// New builds the plugin.
func New(_ context.Context, _ framework.Handle) (framework.Plugin, error) {
	return &NodeAffinity{}, nil
}

// Name returns the plugin's name.
func (pl *NodeAffinity) Name() string { return Name }

type preFilterState struct {
	required nodeaffinity.RequiredNodeAffinity
}

// Clone returns the state itself: it is never changed after PreFilter.
func (s *preFilterState) Clone() framework.StateData { return s }

// PreFilter parses the nodeSelector and required affinity once per pod,
// and asks to be skipped when the pod has neither.
func (pl *NodeAffinity) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	a := pod.Spec.Affinity
	noRequired := a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil
	if len(pod.Spec.NodeSelector) == 0 && noRequired {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(preFilterStateKey, &preFilterState{required: nodeaffinity.GetRequiredNodeAffinity(pod)})
	return nil
}

// Filter rejects a node that fails the nodeSelector or every required
// term. Evicting pods cannot change a node's labels, hence
// UnschedulableAndUnresolvable.
func (pl *NodeAffinity) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	node := nodeInfo.Node()
	if node == nil {
		return framework.AsStatus(fmt.Errorf("node not found"))
	}
	var required nodeaffinity.RequiredNodeAffinity
	if data, err := state.Read(preFilterStateKey); err == nil {
		s, ok := data.(*preFilterState)
		if !ok {
			return framework.AsStatus(fmt.Errorf("%s: cycle state holds %T, not the PreFilter state", Name, data))
		}
		required = s.required
	} else {
		// PreFilter did not run (or skipped): parse here.
		required = nodeaffinity.GetRequiredNodeAffinity(pod)
	}
	// As upstream, a term that fails to parse simply does not match.
	if match, _ := required.Match(node); !match {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonPod)
	}
	return nil
}

type preScoreState struct {
	preferred *nodeaffinity.PreferredSchedulingTerms
}

// Clone returns the state itself: it is never changed after PreScore.
func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore parses the preferred terms once per pod, and asks to be skipped
// when there are none.
func (pl *NodeAffinity) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	preferred, err := preferredTerms(pod)
	if err != nil {
		return framework.AsStatus(fmt.Errorf("parsing pod's preferred node affinity: %w", err))
	}
	if preferred == nil {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(preScoreStateKey, &preScoreState{preferred: preferred})
	return nil
}

func preferredTerms(pod *v1.Pod) (*nodeaffinity.PreferredSchedulingTerms, error) {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		return nil, nil
	}
	return nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
}

// Score sums the weights of the preferred terms the node matches.
func (pl *NodeAffinity) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	node := nodeInfo.Node()
	if node == nil {
		return 0, framework.AsStatus(fmt.Errorf("node not found"))
	}
	var preferred *nodeaffinity.PreferredSchedulingTerms
	if data, err := state.Read(preScoreStateKey); err == nil {
		s, ok := data.(*preScoreState)
		if !ok {
			return 0, framework.AsStatus(fmt.Errorf("%s: cycle state holds %T, not the PreScore state", Name, data))
		}
		preferred = s.preferred
	} else {
		// PreScore did not run: parse here, as upstream falls back to.
		if preferred, err = preferredTerms(pod); err != nil {
			return 0, framework.AsStatus(fmt.Errorf("parsing pod's preferred node affinity: %w", err))
		}
	}
	if preferred == nil {
		return 0, nil
	}
	return preferred.Score(node), nil
}

// ScoreExtensions returns the plugin, which normalises its scores.
func (pl *NodeAffinity) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore scales the weight sums so that the best node gets 100.
func (pl *NodeAffinity) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *framework.Status {
	return helper.DefaultNormalizeScore(framework.MaxNodeScore, false, scores)
}
