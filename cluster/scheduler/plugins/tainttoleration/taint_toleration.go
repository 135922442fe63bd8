// Package tainttoleration matches a node's taints against a pod's
// tolerations: NoSchedule and NoExecute taints the pod does not tolerate
// keep it off the node, and PreferNoSchedule taints it does not tolerate
// make the node less attractive.
package tainttoleration

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
	"github.com/klab-dev/klab/cluster/scheduler/plugins/helper"
)

// Name is the plugin's name in profiles and FailedScheduling messages.
const Name = "TaintToleration"

// ErrReasonNotMatch is upstream's Filter reason. Upstream once named the
// taint ("node(s) had untolerated taint {key: value}"); it no longer does
// (kubernetes#134740), as taint keys and values may be private.
const ErrReasonNotMatch = "node(s) had untolerated taint(s)"

const preScoreStateKey framework.StateKey = "PreScore" + Name

// TaintToleration filters and scores nodes by their taints.
type TaintToleration struct{}

var (
	_ framework.FilterPlugin   = &TaintToleration{}
	_ framework.PreScorePlugin = &TaintToleration{}
	_ framework.ScorePlugin    = &TaintToleration{}
)

// New builds the plugin.
func New(_ context.Context, _ framework.Handle) (framework.Plugin, error) {
	return &TaintToleration{}, nil
}

// Name returns the plugin's name.
func (pl *TaintToleration) Name() string { return Name }

// Filter rejects the node if it has a NoSchedule or NoExecute taint the
// pod does not tolerate. Preemption cannot remove a taint, hence
// UnschedulableAndUnresolvable.
func (pl *TaintToleration) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	node := nodeInfo.Node()
	if node == nil {
		return framework.AsStatus(fmt.Errorf("node not found"))
	}
	if _, untolerated := helper.FindMatchingUntoleratedTaint(node.Spec.Taints, pod.Spec.Tolerations, helper.DoNotScheduleTaintsFilterFunc()); !untolerated {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNotMatch)
}

// preScoreState holds the tolerations that can tolerate a PreferNoSchedule
// taint.
type preScoreState struct {
	tolerationsPreferNoSchedule []v1.Toleration
}

// Clone returns the state itself: it is never changed after PreScore.
func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore keeps the pod's tolerations that apply to PreferNoSchedule
// taints: those with that effect and those with no effect, which match
// every effect.
func (pl *TaintToleration) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	s := &preScoreState{}
	for _, t := range pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == v1.TaintEffectPreferNoSchedule {
			s.tolerationsPreferNoSchedule = append(s.tolerationsPreferNoSchedule, t)
		}
	}
	state.Write(preScoreStateKey, s)
	return nil
}

// Score counts the node's PreferNoSchedule taints the pod does not
// tolerate. More is worse; NormalizeScore turns the count around.
func (pl *TaintToleration) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	node := nodeInfo.Node()
	if node == nil {
		return 0, framework.AsStatus(fmt.Errorf("node not found"))
	}
	data, err := state.Read(preScoreStateKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	s, ok := data.(*preScoreState)
	if !ok {
		return 0, framework.AsStatus(fmt.Errorf("%s: cycle state holds %T, not the PreScore state", Name, data))
	}
	var intolerable int64
	for i := range node.Spec.Taints {
		taint := &node.Spec.Taints[i]
		if taint.Effect != v1.TaintEffectPreferNoSchedule {
			continue
		}
		if !helper.TolerationsTolerateTaint(s.tolerationsPreferNoSchedule, taint) {
			intolerable++
		}
	}
	return intolerable, nil
}

// ScoreExtensions returns the plugin, which normalises its scores.
func (pl *TaintToleration) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore maps the counts onto 0..100 reversed: the node with the
// most intolerable taints gets 0, a node with none gets 100.
func (pl *TaintToleration) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *framework.Status {
	return helper.DefaultNormalizeScore(framework.MaxNodeScore, true, scores)
}
