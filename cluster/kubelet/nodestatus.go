package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/klab-dev/klab/cluster/timing"
)

// Node condition reasons and messages, as upstream's nodestatus setters.
const (
	reasonKubeletReady         = "KubeletReady"
	reasonKubeletNotReady      = "KubeletNotReady"
	messageKubeletReady        = "kubelet is posting ready status"
	reasonSufficientMemory     = "KubeletHasSufficientMemory"
	messageSufficientMemory    = "kubelet has sufficient memory available"
	reasonNoDiskPressure       = "KubeletHasNoDiskPressure"
	messageNoDiskPressure      = "kubelet has no disk pressure"
	reasonSufficientPID        = "KubeletHasSufficientPID"
	messageSufficientPID       = "kubelet has sufficient PID available"
	nodeStatusMaxImages        = 50
	kernelVersion              = "klab"
	osImage                    = "klab"
	nodeStatusEventTransitions = "Node %s status is now: %s"
)

// setNodeStatus fills in a node's status from the configuration and the
// runtime (upstream's defaultNodeStatusFuncs). Conditions keep their last
// transition time while their status holds; every condition gets a fresh
// heartbeat.
func (k *Kubelet) setNodeStatus(ctx context.Context, node *v1.Node) {
	s := &node.Status
	s.Capacity = k.cfg.Capacity.DeepCopy()
	s.Allocatable = k.cfg.allocatable()
	s.Addresses = nil
	if k.cfg.NodeIP != "" {
		s.Addresses = append(s.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: k.cfg.NodeIP})
	}
	s.Addresses = append(s.Addresses, v1.NodeAddress{Type: v1.NodeHostName, Address: k.cfg.NodeName})
	s.DaemonEndpoints.KubeletEndpoint.Port = k.port()
	s.NodeInfo = v1.NodeSystemInfo{
		MachineID:               k.cfg.NodeName,
		SystemUUID:              k.cfg.NodeName,
		BootID:                  k.cfg.NodeName,
		KernelVersion:           kernelVersion,
		OSImage:                 osImage,
		ContainerRuntimeVersion: k.runtime.Name() + "://klab",
		KubeletVersion:          Version,
		OperatingSystem:         nodeOS,
		Architecture:            runtime.GOARCH,
	}
	images, runtimeErr := k.runtime.ListImages(ctx)
	if runtimeErr == nil {
		sort.SliceStable(images, func(i, j int) bool { return images[i].Size > images[j].Size })
		s.Images = nil
		for i, img := range images {
			if i == nodeStatusMaxImages {
				break
			}
			s.Images = append(s.Images, v1.ContainerImage{Names: img.Names, SizeBytes: img.Size})
		}
	}
	now := metav1.NewTime(k.clock.Now().Truncate(time.Second))
	ready := v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: reasonKubeletReady, Message: messageKubeletReady}
	if runtimeErr != nil {
		ready = v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: reasonKubeletNotReady,
			Message: fmt.Sprintf("container runtime is down: %v", runtimeErr)}
	}
	want := []v1.NodeCondition{
		{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: reasonSufficientMemory, Message: messageSufficientMemory},
		{Type: v1.NodeDiskPressure, Status: v1.ConditionFalse, Reason: reasonNoDiskPressure, Message: messageNoDiskPressure},
		{Type: v1.NodePIDPressure, Status: v1.ConditionFalse, Reason: reasonSufficientPID, Message: messageSufficientPID},
		ready,
	}
	var conditions []v1.NodeCondition
	for _, c := range want {
		c.LastHeartbeatTime, c.LastTransitionTime = now, now
		var old *v1.NodeCondition
		for i := range s.Conditions {
			if s.Conditions[i].Type == c.Type {
				old = &s.Conditions[i]
			}
		}
		if old != nil && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		} else {
			k.recordNodeTransition(c)
		}
		conditions = append(conditions, c)
	}
	// Conditions set by others (NetworkUnavailable, ...) stay.
	for _, c := range s.Conditions {
		if c.Type != v1.NodeReady && c.Type != v1.NodeMemoryPressure && c.Type != v1.NodeDiskPressure && c.Type != v1.NodePIDPressure {
			conditions = append(conditions, c)
		}
	}
	s.Conditions = conditions
}

// recordNodeTransition records upstream's node events: "Node x status is
// now: NodeHasSufficientMemory", NodeReady, NodeNotReady.
func (k *Kubelet) recordNodeTransition(c v1.NodeCondition) {
	var reason string
	switch c.Type {
	case v1.NodeMemoryPressure:
		reason = "NodeHasSufficientMemory"
	case v1.NodeDiskPressure:
		reason = "NodeHasNoDiskPressure"
	case v1.NodePIDPressure:
		reason = "NodeHasSufficientPID"
	case v1.NodeReady:
		reason = eventNodeReady
		if c.Status != v1.ConditionTrue {
			reason = eventNodeNotReady
		}
	}
	k.rec.nodeEvent(v1.EventTypeNormal, reason, fmt.Sprintf(nodeStatusEventTransitions, k.cfg.NodeName, reason))
}

// nodeStatusLoop posts the node status when it changed, and at least
// every node-status-update-frequency (scaled), so that the Ready
// condition's heartbeat shows the kubelet alive even to readers that do
// not look at the Lease.
func (k *Kubelet) nodeStatusLoop() {
	frequency := k.scaled(timing.NodeStatusUpdateFrequency)
	ticker := k.clock.NewTicker(frequency)
	defer ticker.Stop()
	for {
		select {
		case <-k.ctx.Done():
			return
		case <-ticker.C():
		case <-k.nodeKick:
		}
		if err := k.updateNodeStatus(k.ctx, frequency); err != nil && k.ctx.Err() == nil {
			k.log.Warn("error updating node status, will retry", "err", err)
		}
	}
}

// updateNodeStatus reads the Node, computes its status and writes it if
// it changed or the last write is older than frequency.
func (k *Kubelet) updateNodeStatus(ctx context.Context, frequency time.Duration) error {
	original, err := k.client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("error getting node %q: %w", k.cfg.NodeName, err)
	}
	node := original.DeepCopy()
	k.setNodeStatus(ctx, node)
	k.nodeMu.Lock()
	due := k.clock.Since(k.nodeStatusPosted) >= frequency
	k.nodeMu.Unlock()
	if !due && nodeStatusEqual(original.Status, node.Status) {
		return nil
	}
	patch, err := nodeStatusPatch(original, node)
	if err != nil {
		return err
	}
	updated, err := k.client.CoreV1().Nodes().Patch(ctx, k.cfg.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("patch node status: %w", err)
	}
	k.nodeMu.Lock()
	k.node, k.nodeStatusPosted = updated, k.clock.Now()
	k.nodeMu.Unlock()
	k.rec.step(nil, "", StepNodeStatus, readyMessage(updated))
	return nil
}

func readyMessage(n *v1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return fmt.Sprintf("Ready=%s %s", c.Status, c.Reason)
		}
	}
	return ""
}

// nodeStatusEqual compares statuses without the heartbeats.
func nodeStatusEqual(a, b v1.NodeStatus) bool {
	strip := func(s v1.NodeStatus) v1.NodeStatus {
		s = *s.DeepCopy()
		for i := range s.Conditions {
			s.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
		return s
	}
	return apiequality.Semantic.DeepEqual(strip(a), strip(b))
}

func nodeStatusPatch(original, updated *v1.Node) ([]byte, error) {
	oldData, err := json.Marshal(v1.Node{Status: original.Status})
	if err != nil {
		return nil, fmt.Errorf("encode node status: %w", err)
	}
	newData, err := json.Marshal(v1.Node{Status: updated.Status})
	if err != nil {
		return nil, fmt.Errorf("encode node status: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, v1.Node{})
	if err != nil {
		return nil, fmt.Errorf("node status patch: %w", err)
	}
	return patch, nil
}
