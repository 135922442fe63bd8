package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	nodetopology "k8s.io/component-helpers/node/topology"
)

const (
	// retrySleepTime and nodeHealthUpdateRetry bound how a failed node
	// status update is retried within one monitor pass.
	retrySleepTime        = 20 * time.Millisecond
	nodeHealthUpdateRetry = 5
	// nodeEvictionPeriod is how often the taint queues are looked at; the
	// rate limiter, not this period, sets how fast nodes get tainted.
	nodeEvictionPeriod = 100 * time.Millisecond
)

// monitorNodeHealth is one pass over every node (every NodeMonitorPeriod):
// it notes new and deleted nodes, marks silent nodes Unknown and their pods
// not ready, queues not-ready nodes for NoExecute taints and removes them
// from nodes that are ready again, and updates each zone's disruption
// state.
func (c *Controller) monitorNodeHealth(ctx context.Context) error {
	// The cache may lag the API server a little; that is fine here, since
	// everything below is eventually consistent anyway.
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	// In name order, so that nodes queue for taints in an order a reader
	// can predict.
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	added, deleted, newZoneRepresentatives := c.classifyNodes(nodes)
	for _, n := range newZoneRepresentatives {
		c.addTainterForNewZone(n)
	}
	for _, n := range added {
		c.logger.Info("Controller observed a new Node", "node", n.Name)
		c.recordNodeEvent(n.Name, n.UID, v1.EventTypeNormal, "RegisteredNode", fmt.Sprintf("Registered Node %v in Controller", n.Name))
		c.knownNodes[n.Name] = n
		c.addTainterForNewZone(n)
		// A node this controller has just met starts with a clean slate:
		// taints a previous leader left are removed, and put back only if
		// the node stays silent for a whole grace period.
		if _, err := c.markNodeAsReachable(ctx, n); err != nil {
			c.logger.Error("Failed to remove taints from node", "node", n.Name, "err", err)
		}
	}
	for _, n := range deleted {
		c.logger.Info("Controller observed a Node deletion", "node", n.Name)
		c.recordNodeEvent(n.Name, n.UID, v1.EventTypeNormal, "RemovingNode", fmt.Sprintf("Removing Node %v from Controller", n.Name))
		delete(c.knownNodes, n.Name)
	}

	zoneToNodeConditions := map[string][]*v1.NodeCondition{}
	var errs []error
	for _, n := range nodes {
		if err := c.updateNode(ctx, n.DeepCopy(), zoneToNodeConditions); err != nil {
			errs = append(errs, err)
		}
	}
	c.handleDisruption(ctx, zoneToNodeConditions, nodes)
	return errors.Join(errs...)
}

// updateNode checks one node's health and acts on it. Unless the node is
// excluded from disruption checks, its Ready condition now (nil if it has
// none) is added to its zone's in zoneToNodeConditions.
func (c *Controller) updateNode(ctx context.Context, node *v1.Node, zoneToNodeConditions map[string][]*v1.NodeCondition) error {
	before := c.health.get(node.Name)
	var observed v1.NodeCondition
	var current *v1.NodeCondition
	err := wait.PollUntilContextTimeout(ctx, retrySleepTime, retrySleepTime*nodeHealthUpdateRetry, true, func(ctx context.Context) (bool, error) {
		var err error
		if observed, current, err = c.tryUpdateNodeHealth(ctx, node); err == nil {
			return true, nil
		}
		name := node.Name
		if node, err = c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, fmt.Errorf("get node %s to retry its health update: %w", name, err)
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("update health of node %s (no pods will be evicted): %w", node.Name, err)
	}
	if !isNodeExcludedFromDisruptionChecks(node) {
		zone := nodetopology.GetZoneKey(node)
		zoneToNodeConditions[zone] = append(zoneToNodeConditions[zone], current)
	}
	if before != nil && current != nil {
		if was := getNodeCondition(before.status, v1.NodeReady); was != nil && was.Status != current.Status {
			c.observe(Transition{Kind: TransitionNodeReady, Node: node.Name, From: string(was.Status), To: string(current.Status)})
		}
	}
	if current == nil {
		c.nodesToRetry.Delete(node.Name)
		return nil
	}

	pods, err := c.podsAssignedToNode(node.Name)
	if err != nil {
		if current.Status != v1.ConditionTrue && observed.Status == v1.ConditionTrue {
			// The Ready -> not ready transition must reach the pods: try
			// again on the next pass.
			c.nodesToRetry.Store(node.Name, struct{}{})
		}
		return fmt.Errorf("list pods of node %s: %w", node.Name, err)
	}
	// Taints follow what the node said before this pass changed it: a node
	// marked Unknown now is tainted on the next pass, once the cache agrees.
	c.processTaintBaseEviction(ctx, node, &observed)

	_, needsRetry := c.nodesToRetry.Load(node.Name)
	switch {
	case current.Status != v1.ConditionTrue && observed.Status == v1.ConditionTrue:
		// Report the change once, when it happens.
		c.recordNodeStatusChange(node, "NodeNotReady")
		fallthrough
	case needsRetry && observed.Status != v1.ConditionTrue:
		if err := c.markPodsNotReady(ctx, pods, node.Name); err != nil {
			c.nodesToRetry.Store(node.Name, struct{}{})
			return fmt.Errorf("mark pods of node %s not ready (will retry): %w", node.Name, err)
		}
	}
	c.nodesToRetry.Delete(node.Name)
	return nil
}

// processTaintBaseEviction queues a not-ready node for its NoExecute taint,
// swaps not-ready and unreachable at once when the node moves from one to
// the other, and removes both from a node that is ready.
func (c *Controller) processTaintBaseEviction(ctx context.Context, node *v1.Node, observed *v1.NodeCondition) {
	switch observed.Status {
	case v1.ConditionFalse:
		if taintExists(node.Spec.Taints, UnreachableTaintTemplate) {
			if err := c.swapNodeControllerTaint(ctx, []*v1.Taint{NotReadyTaintTemplate}, []*v1.Taint{UnreachableTaintTemplate}, node); err != nil {
				c.logger.Error("Failed to instantly swap UnreachableTaint to NotReadyTaint. Will try again in the next cycle", "node", node.Name, "err", err)
			}
		} else if c.markNodeForTainting(node, v1.ConditionFalse) {
			c.logger.Info("Node is NotReady. Adding it to the Taint queue", "node", node.Name)
		}
	case v1.ConditionUnknown:
		if taintExists(node.Spec.Taints, NotReadyTaintTemplate) {
			if err := c.swapNodeControllerTaint(ctx, []*v1.Taint{UnreachableTaintTemplate}, []*v1.Taint{NotReadyTaintTemplate}, node); err != nil {
				c.logger.Error("Failed to instantly swap NotReadyTaint to UnreachableTaint. Will try again in the next cycle", "node", node.Name, "err", err)
			}
		} else if c.markNodeForTainting(node, v1.ConditionUnknown) {
			c.logger.Info("Node is unresponsive. Adding it to the Taint queue", "node", node.Name)
		}
	case v1.ConditionTrue:
		removed, err := c.markNodeAsReachable(ctx, node)
		if err != nil {
			c.logger.Error("Failed to remove taints from node. Will retry in next iteration", "node", node.Name, "err", err)
		}
		if removed {
			c.logger.Info("Node is healthy again, removed all taints", "node", node.Name)
		}
	}
}

// markNodeForTainting puts the node into its zone's taint queue. A node
// not yet carrying the taint for status goes to the back of the queue.
func (c *Controller) markNodeForTainting(node *v1.Node, status v1.ConditionStatus) bool {
	c.evictorLock.Lock()
	defer c.evictorLock.Unlock()
	q := c.tainterFor(node)
	if status == v1.ConditionFalse && !taintExists(node.Spec.Taints, NotReadyTaintTemplate) {
		q.remove(node.Name)
	}
	if status == v1.ConditionUnknown && !taintExists(node.Spec.Taints, UnreachableTaintTemplate) {
		q.remove(node.Name)
	}
	return q.add(node.Name, string(node.UID))
}

// markNodeAsReachable removes the not-ready and unreachable NoExecute
// taints and takes the node out of its taint queue. It reports whether the
// node was queued.
func (c *Controller) markNodeAsReachable(ctx context.Context, node *v1.Node) (bool, error) {
	if err := c.removeTaintOffNode(ctx, node.Name, node, UnreachableTaintTemplate); err != nil {
		return false, fmt.Errorf("remove unreachable taint from node %s: %w", node.Name, err)
	}
	if err := c.removeTaintOffNode(ctx, node.Name, node, NotReadyTaintTemplate); err != nil {
		return false, fmt.Errorf("remove not-ready taint from node %s: %w", node.Name, err)
	}
	c.evictorLock.Lock()
	defer c.evictorLock.Unlock()
	return c.tainterFor(node).remove(node.Name), nil
}

// doNoExecuteTaintingPass taints the nodes whose turn has come in each
// zone's rate-limited queue. Because the taint eviction controller deletes
// pods as soon as their tolerations run out, limiting how fast nodes are
// tainted is what limits how fast pods are evicted.
func (c *Controller) doNoExecuteTaintingPass(ctx context.Context) {
	c.evictorLock.Lock()
	queues := make([]*rateLimitedTimedQueue, 0, len(c.zoneTainters))
	for _, q := range c.zoneTainters {
		queues = append(queues, q)
	}
	c.evictorLock.Unlock()
	for _, q := range queues {
		q.try(func(v timedValue) (bool, time.Duration) {
			node, err := c.nodeLister.Get(v.value)
			if apierrors.IsNotFound(err) {
				c.logger.Info("Node no longer present in nodeLister", "node", v.value)
				return true, 0
			}
			if err != nil {
				return false, 50 * time.Millisecond
			}
			cond := getNodeCondition(&node.Status, v1.NodeReady)
			if cond == nil {
				return false, 50 * time.Millisecond
			}
			// Unreachable and not-ready mirror the Ready condition, so a
			// node carries at most one of them.
			var add, opposite *v1.Taint
			switch cond.Status {
			case v1.ConditionFalse:
				add, opposite = NotReadyTaintTemplate, UnreachableTaintTemplate
			case v1.ConditionUnknown:
				add, opposite = UnreachableTaintTemplate, NotReadyTaintTemplate
			default:
				// Ready again while it waited: nothing to do.
				return true, 0
			}
			if err := c.swapNodeControllerTaint(ctx, []*v1.Taint{add}, []*v1.Taint{opposite}, node); err != nil {
				c.logger.Error("Failed to taint node", "node", node.Name, "err", err)
				return false, 0
			}
			return true, 0
		})
	}
}

// labelNodeDisruptionExclusion keeps a node out of the zone disruption
// counts.
const labelNodeDisruptionExclusion = "node.kubernetes.io/exclude-disruption"

func isNodeExcludedFromDisruptionChecks(node *v1.Node) bool {
	_, ok := node.Labels[labelNodeDisruptionExclusion]
	return ok
}
