// Package nodeunschedulable keeps pods off cordoned nodes: a node with
// spec.unschedulable (kubectl cordon) takes only pods that tolerate the
// node.kubernetes.io/unschedulable:NoSchedule taint, such as DaemonSet pods.
package nodeunschedulable

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
	"github.com/klab-dev/klab/cluster/scheduler/plugins/helper"
)

// Name is the plugin's name in profiles and FailedScheduling messages.
const Name = "NodeUnschedulable"

// Reasons, worded as upstream's.
const (
	// ErrReasonUnknownCondition is the reason when the NodeInfo has no node.
	ErrReasonUnknownCondition = "node(s) had unknown conditions"
	// ErrReasonUnschedulable is the reason for a cordoned node.
	ErrReasonUnschedulable = "node(s) were unschedulable"
)

// NodeUnschedulable filters out cordoned nodes.
type NodeUnschedulable struct{}

var _ framework.FilterPlugin = &NodeUnschedulable{}

// New builds the plugin.
func New(_ context.Context, _ framework.Handle) (framework.Plugin, error) {
	return &NodeUnschedulable{}, nil
}

// Name returns the plugin's name.
func (pl *NodeUnschedulable) Name() string { return Name }

// Filter rejects a cordoned node unless the pod tolerates the
// unschedulable taint. The code is UnschedulableAndUnresolvable: evicting
// other pods would not uncordon the node.
func (pl *NodeUnschedulable) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	node := nodeInfo.Node()
	if node == nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUnknownCondition)
	}
	if !node.Spec.Unschedulable {
		return nil
	}
	// The node lifecycle controller adds this taint to cordoned nodes; a
	// pod that tolerates the taint tolerates the cordon too.
	tolerates := helper.TolerationsTolerateTaint(pod.Spec.Tolerations, &v1.Taint{
		Key:    v1.TaintNodeUnschedulable,
		Effect: v1.TaintEffectNoSchedule,
	})
	if tolerates {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUnschedulable)
}
