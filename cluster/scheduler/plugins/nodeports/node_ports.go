// Package nodeports keeps two pods from binding the same host port on a
// node.
package nodeports

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

// Name is the plugin's name in profiles and FailedScheduling messages.
const Name = "NodePorts"

// ErrReason is upstream's reason for a host port already taken.
const ErrReason = "node(s) didn't have free ports for the requested pod ports"

const preFilterStateKey framework.StateKey = "PreFilter" + Name

// NodePorts filters out nodes where a host port the pod asks for is taken.
type NodePorts struct{}

var (
	_ framework.PreFilterPlugin = &NodePorts{}
	_ framework.FilterPlugin    = &NodePorts{}
)

// New builds the plugin.
func New(_ context.Context, _ framework.Handle) (framework.Plugin, error) {
	return &NodePorts{}, nil
}

// Name returns the plugin's name.
func (pl *NodePorts) Name() string { return Name }

type preFilterState []v1.ContainerPort

// Clone returns the state itself: it is never changed after PreFilter.
func (s preFilterState) Clone() framework.StateData { return s }

// PreFilter collects the pod's host ports, and asks to be skipped when it
// has none (most pods).
func (pl *NodePorts) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	ports := HostPorts(pod)
	if len(ports) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(preFilterStateKey, preFilterState(ports))
	return nil
}

// HostPorts returns the host ports of the pod's containers and of its
// sidecars (restartable init containers), which run as long as the pod.
func HostPorts(pod *v1.Pod) []v1.ContainerPort {
	var ports []v1.ContainerPort
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy == nil || *c.RestartPolicy != v1.ContainerRestartPolicyAlways {
			continue
		}
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				ports = append(ports, p)
			}
		}
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				ports = append(ports, p)
			}
		}
	}
	return ports
}

// Filter rejects the node if any wanted port conflicts with one in use.
// Code Unschedulable: evicting the pod holding the port would free it.
func (pl *NodePorts) Filter(_ context.Context, state *framework.CycleState, _ *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	data, err := state.Read(preFilterStateKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	wanted, ok := data.(preFilterState)
	if !ok {
		return framework.AsStatus(fmt.Errorf("%s: cycle state holds %T, not the PreFilter state", Name, data))
	}
	if !fitsPorts(wanted, nodeInfo.UsedPorts) {
		return framework.NewStatus(framework.Unschedulable, ErrReason)
	}
	return nil
}

// Fits reports whether the pod's host ports are free on the node.
func Fits(pod *v1.Pod, nodeInfo *framework.NodeInfo) bool {
	return fitsPorts(HostPorts(pod), nodeInfo.UsedPorts)
}

func fitsPorts(wanted []v1.ContainerPort, used []framework.HostPort) bool {
	for _, p := range wanted {
		if conflicts(used, p.HostIP, p.Protocol, p.HostPort) {
			return false
		}
	}
	return true
}

// conflicts applies upstream's rules: ports clash only with the same
// protocol and number; an empty IP means 0.0.0.0 and an empty protocol
// TCP; 0.0.0.0 clashes with every IP, and a specific IP clashes with the
// same IP and with 0.0.0.0.
func conflicts(used []framework.HostPort, ip string, protocol v1.Protocol, port int32) bool {
	if port <= 0 {
		return false
	}
	ip, protocol = sanitize(ip, protocol)
	for _, u := range used {
		uip, uprotocol := sanitize(u.IP, u.Protocol)
		if u.Port != port || uprotocol != protocol {
			continue
		}
		if ip == defaultHostIP || uip == defaultHostIP || uip == ip {
			return true
		}
	}
	return false
}

const defaultHostIP = "0.0.0.0"

func sanitize(ip string, protocol v1.Protocol) (string, v1.Protocol) {
	if ip == "" {
		ip = defaultHostIP
	}
	if protocol == "" {
		protocol = v1.ProtocolTCP
	}
	return ip, protocol
}
