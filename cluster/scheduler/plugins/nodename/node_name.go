// Package nodename honours spec.nodeName: a pod that names a node may only
// run there.
package nodename

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

// Name is the plugin's name in profiles and FailedScheduling messages.
const Name = "NodeName"

// ErrReason is upstream's reason for a node other than the requested one.
const ErrReason = "node(s) didn't match the requested node name"

// NodeName filters out every node but the one the pod names.
type NodeName struct{}

var _ framework.FilterPlugin = &NodeName{}

// New builds the plugin.
func New(_ context.Context, _ framework.Handle) (framework.Plugin, error) {
	return &NodeName{}, nil
}

// Name returns the plugin's name.
func (pl *NodeName) Name() string { return Name }

// Filter passes every node when the pod names none, and only the named
// node otherwise.
func (pl *NodeName) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	if Fits(pod, nodeInfo) {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReason)
}

// Fits reports whether the pod may run on the node as far as
// spec.nodeName is concerned.
func Fits(pod *v1.Pod, nodeInfo *framework.NodeInfo) bool {
	return pod.Spec.NodeName == "" || (nodeInfo.Node() != nil && nodeInfo.Node().Name == pod.Spec.NodeName)
}
