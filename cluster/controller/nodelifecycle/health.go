package nodelifecycle

import (
	"context"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Upstream's wording for conditions this controller sets.
const (
	reasonNodeStatusUnknown      = "NodeStatusUnknown"
	messageNodeStatusUnknown     = "Kubelet stopped posting node status."
	reasonNodeStatusNeverUpdated = "NodeStatusNeverUpdated"
	messageNodeStatusNeverUpdate = "Kubelet never posted node status."
)

// ownedConditions are the conditions a kubelet posts and this controller
// sets to Unknown when the kubelet goes silent. NetworkUnavailable is left
// alone: the network plugin owns it, not the kubelet.
var ownedConditions = []v1.NodeConditionType{v1.NodeReady, v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure}

// nodeHealth is what the controller last saw of a node, and when by its
// own clock.
type nodeHealth struct {
	// probeTimestamp is when the controller last saw the node's Ready
	// heartbeat or its Lease change.
	probeTimestamp time.Time
	// readyTransitionTimestamp is when it last saw Ready change status.
	readyTransitionTimestamp time.Time
	status                   *v1.NodeStatus
	lease                    *coordv1.Lease
}

func (h *nodeHealth) deepCopy() *nodeHealth {
	if h == nil {
		return nil
	}
	return &nodeHealth{
		probeTimestamp:           h.probeTimestamp,
		readyTransitionTimestamp: h.readyTransitionTimestamp,
		status:                   h.status.DeepCopy(),
		lease:                    h.lease.DeepCopy(),
	}
}

// nodeHealthMap holds the nodeHealth of every node, shared by the monitor
// loop and the pod workers.
type nodeHealthMap struct {
	mu     sync.RWMutex
	health map[string]*nodeHealth
}

func newNodeHealthMap() *nodeHealthMap {
	return &nodeHealthMap{health: map[string]*nodeHealth{}}
}

// get returns a copy, so the caller may change it freely.
func (m *nodeHealthMap) get(name string) *nodeHealth {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.health[name].deepCopy()
}

func (m *nodeHealthMap) set(name string, h *nodeHealth) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.health[name] = h
}

// getNodeCondition returns the condition of the given type, or nil.
func getNodeCondition(status *v1.NodeStatus, t v1.NodeConditionType) *v1.NodeCondition {
	if status == nil {
		return nil
	}
	for i := range status.Conditions {
		if status.Conditions[i].Type == t {
			return &status.Conditions[i]
		}
	}
	return nil
}

// tryUpdateNodeHealth brings the controller's record of node up to date
// and, if the node has been silent longer than its grace period, sets its
// conditions to Unknown in the API server. It returns the Ready condition
// as the node had it (observed) and as it is now (current, nil if the node
// has none). node is changed in place.
func (c *Controller) tryUpdateNodeHealth(ctx context.Context, node *v1.Node) (observed v1.NodeCondition, current *v1.NodeCondition, err error) {
	health := c.health.get(node.Name)
	defer func() { c.health.set(node.Name, health) }()

	var gracePeriod time.Duration
	current = getNodeCondition(&node.Status, v1.NodeReady)
	if current == nil {
		// The kubelet never posted a status: pretend it posted Unknown when
		// the node was created, and give it the longer startup grace.
		observed = v1.NodeCondition{
			Type: v1.NodeReady, Status: v1.ConditionUnknown,
			LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: node.CreationTimestamp,
		}
		gracePeriod = c.nodeStartupGracePeriod
		if health != nil {
			health.status = &node.Status
		} else {
			health = &nodeHealth{
				status:                   &node.Status,
				probeTimestamp:           node.CreationTimestamp.Time,
				readyTransitionTimestamp: node.CreationTimestamp.Time,
			}
		}
	} else {
		observed = *current
		gracePeriod = c.nodeMonitorGracePeriod
	}

	var saved *v1.NodeCondition
	var savedLease *coordv1.Lease
	if health != nil {
		saved = getNodeCondition(health.status, v1.NodeReady)
		savedLease = health.lease
	}
	now := c.clock.Now()
	switch {
	case health == nil:
		// First sight of this node (or of this controller after a restart
		// or a leader change): start counting now.
		health = &nodeHealth{status: &node.Status, probeTimestamp: now, readyTransitionTimestamp: now}
	case saved == nil && current != nil, saved != nil && current == nil:
		health = &nodeHealth{status: &node.Status, probeTimestamp: now, readyTransitionTimestamp: now}
	case saved != nil && current != nil && !saved.LastHeartbeatTime.Equal(&current.LastHeartbeatTime):
		// A new heartbeat: the kubelet is alive.
		transition := health.readyTransitionTimestamp
		if !saved.LastTransitionTime.Equal(&current.LastTransitionTime) {
			transition = now
		}
		health = &nodeHealth{status: &node.Status, probeTimestamp: now, readyTransitionTimestamp: transition}
	}
	// A renewed Lease counts as a heartbeat too; it is the cheap one a
	// kubelet sends every NodeLeaseRenewInterval.
	lease, _ := c.leaseLister.Leases(v1.NamespaceNodeLease).Get(node.Name)
	if lease != nil && (savedLease == nil || savedLease.Spec.RenewTime.Before(lease.Spec.RenewTime)) {
		health.lease = lease
		health.probeTimestamp = now
	}

	if !now.After(health.probeTimestamp.Add(gracePeriod)) {
		return observed, current, nil
	}

	// Silent for longer than the grace period: whatever the node last
	// said no longer holds.
	stamp := metav1.NewTime(now)
	for _, t := range ownedConditions {
		cond := getNodeCondition(&node.Status, t)
		if cond == nil {
			node.Status.Conditions = append(node.Status.Conditions, v1.NodeCondition{
				Type: t, Status: v1.ConditionUnknown,
				Reason: reasonNodeStatusNeverUpdated, Message: messageNodeStatusNeverUpdate,
				LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: stamp,
			})
			continue
		}
		if cond.Status != v1.ConditionUnknown {
			cond.Status = v1.ConditionUnknown
			cond.Reason = reasonNodeStatusUnknown
			cond.Message = messageNodeStatusUnknown
			cond.LastTransitionTime = stamp
		}
	}
	current = getNodeCondition(&node.Status, v1.NodeReady)
	if apiequality.Semantic.DeepEqual(current, &observed) {
		return observed, current, nil
	}
	if _, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		return observed, current, err
	}
	health = &nodeHealth{status: &node.Status, probeTimestamp: health.probeTimestamp, readyTransitionTimestamp: now, lease: lease}
	return observed, current, nil
}
