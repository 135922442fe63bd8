package nodelifecycle

import (
	"context"

	v1 "k8s.io/api/core/v1"
	nodetopology "k8s.io/component-helpers/node/topology"
)

// zoneState is how much of a zone is down.
type zoneState string

const (
	stateInitial           = zoneState("Initial")
	stateNormal            = zoneState("Normal")
	stateFullDisruption    = zoneState("FullDisruption")
	statePartialDisruption = zoneState("PartialDisruption")
)

// Upstream defaults of the eviction flags.
const (
	// nodeEvictionRate is --node-eviction-rate: nodes tainted per second
	// in a healthy zone.
	nodeEvictionRate = 0.1
	// secondaryNodeEvictionRate is --secondary-node-eviction-rate: the
	// rate in a partly disrupted zone bigger than largeClusterThreshold.
	secondaryNodeEvictionRate = 0.01
	// largeClusterThreshold is --large-cluster-size-threshold: a partly
	// disrupted zone with no more nodes than this is not tainted at all.
	largeClusterThreshold = 50
	// unhealthyZoneThreshold is --unhealthy-zone-threshold: the share of
	// not-ready nodes (more than two) that makes a zone partly disrupted.
	unhealthyZoneThreshold = 0.55
)

// classifyNodes splits the nodes into those the controller has not seen
// before, those it knew that are gone, and known nodes in a zone it has no
// state for (their zone label changed).
func (c *Controller) classifyNodes(all []*v1.Node) (added, deleted, newZoneRepresentatives []*v1.Node) {
	for _, n := range all {
		if _, known := c.knownNodes[n.Name]; !known {
			added = append(added, n)
			continue
		}
		c.evictorLock.Lock()
		_, found := c.zoneStates[nodetopology.GetZoneKey(n)]
		c.evictorLock.Unlock()
		if !found {
			newZoneRepresentatives = append(newZoneRepresentatives, n)
		}
	}
	if len(c.knownNodes)+len(added) != len(all) {
		present := make(map[string]bool, len(all))
		for _, n := range all {
			present[n.Name] = true
		}
		for name, n := range c.knownNodes {
			if !present[name] {
				deleted = append(deleted, n)
			}
		}
	}
	return added, deleted, newZoneRepresentatives
}

// addTainterForNewZone gives a zone seen for the first time its taint
// queue, rate limited at the healthy rate.
func (c *Controller) addTainterForNewZone(node *v1.Node) {
	c.evictorLock.Lock()
	defer c.evictorLock.Unlock()
	c.tainterFor(node)
}

// tainterFor returns the taint queue of the node's zone, creating it if
// need be. The caller holds evictorLock.
func (c *Controller) tainterFor(node *v1.Node) *rateLimitedTimedQueue {
	zone := nodetopology.GetZoneKey(node)
	if _, found := c.zoneStates[zone]; !found {
		c.zoneStates[zone] = stateInitial
	}
	q, ok := c.zoneTainters[zone]
	if !ok {
		q = newRateLimitedTimedQueue(c.clock, c.evictionLimiterQPS)
		c.zoneTainters[zone] = q
	}
	return q
}

// computeZoneState says how disrupted a zone is from its nodes' Ready
// conditions, and how many of them are not ready.
func computeZoneState(conditions []*v1.NodeCondition) (int, zoneState) {
	ready, notReady := 0, 0
	for _, c := range conditions {
		if c != nil && c.Status == v1.ConditionTrue {
			ready++
		} else {
			notReady++
		}
	}
	switch {
	case ready == 0 && notReady > 0:
		return notReady, stateFullDisruption
	case notReady > 2 && float32(notReady)/float32(notReady+ready) >= unhealthyZoneThreshold:
		return notReady, statePartialDisruption
	default:
		return notReady, stateNormal
	}
}

// handleDisruption updates each zone's state and its taint rate. When no
// node of any zone is ready, the fault is more likely this controller's or
// the network's than every node's: it removes the NoExecute taints and
// stops tainting ("master disruption mode") until some node is ready
// again, and then starts every node's grace period afresh.
func (c *Controller) handleDisruption(ctx context.Context, zoneToNodeConditions map[string][]*v1.NodeCondition, nodes []*v1.Node) {
	newStates := map[string]zoneState{}
	allAreFullyDisrupted := true
	c.evictorLock.Lock()
	for zone, conditions := range zoneToNodeConditions {
		_, state := computeZoneState(conditions)
		if state != stateFullDisruption {
			allAreFullyDisrupted = false
		}
		newStates[zone] = state
		if _, had := c.zoneStates[zone]; !had {
			c.zoneStates[zone] = stateInitial
		}
	}
	allWasFullyDisrupted := true
	for zone, state := range c.zoneStates {
		if _, have := zoneToNodeConditions[zone]; !have {
			delete(c.zoneStates, zone)
			continue
		}
		if state != stateFullDisruption {
			allWasFullyDisrupted = false
		}
	}
	c.evictorLock.Unlock()

	if allAreFullyDisrupted && allWasFullyDisrupted {
		return
	}
	if allAreFullyDisrupted {
		c.logger.Info("Controller detected that all Nodes are not-Ready. Entering master disruption mode")
		for _, n := range nodes {
			if _, err := c.markNodeAsReachable(ctx, n); err != nil {
				c.logger.Error("Failed to remove taints from Node", "node", n.Name, "err", err)
			}
		}
		c.evictorLock.Lock()
		for zone := range c.zoneStates {
			if q := c.zoneTainters[zone]; q != nil {
				q.swapLimiter(0)
			}
			c.setZoneState(zone, stateFullDisruption)
		}
		c.evictorLock.Unlock()
		return
	}
	if allWasFullyDisrupted {
		c.logger.Info("Controller detected that some Nodes are Ready. Exiting master disruption mode")
		now := c.clock.Now()
		for _, n := range nodes {
			if h := c.health.get(n.Name); h != nil {
				h.probeTimestamp, h.readyTransitionTimestamp = now, now
				c.health.set(n.Name, h)
			}
		}
		c.evictorLock.Lock()
		for zone := range c.zoneStates {
			c.setLimiterInZone(zone, len(zoneToNodeConditions[zone]), newStates[zone])
			c.setZoneState(zone, newStates[zone])
		}
		c.evictorLock.Unlock()
		return
	}
	c.evictorLock.Lock()
	defer c.evictorLock.Unlock()
	for zone, state := range c.zoneStates {
		if state == newStates[zone] {
			continue
		}
		c.logger.Info("Controller detected that zone is now in new state", "zone", zone, "newState", newStates[zone])
		c.setLimiterInZone(zone, len(zoneToNodeConditions[zone]), newStates[zone])
		c.setZoneState(zone, newStates[zone])
	}
}

// setZoneState records a zone's new state. The caller holds evictorLock.
func (c *Controller) setZoneState(zone string, state zoneState) {
	if old := c.zoneStates[zone]; old != state {
		c.observe(Transition{Kind: TransitionZoneState, Zone: zone, From: string(old), To: string(state)})
	}
	c.zoneStates[zone] = state
}

// setLimiterInZone sets the zone's taint rate for its state. The caller
// holds evictorLock.
func (c *Controller) setLimiterInZone(zone string, zoneSize int, state zoneState) {
	q := c.zoneTainters[zone]
	if q == nil {
		return
	}
	switch state {
	case stateNormal, stateFullDisruption:
		// A zone that is entirely down while others are up is most
		// likely really down: taint it at the normal rate.
		q.swapLimiter(c.evictionLimiterQPS)
	case statePartialDisruption:
		// A small zone is not tainted at all, a large one slowly.
		if zoneSize > largeClusterThreshold {
			q.swapLimiter(c.secondaryEvictionLimiterQPS)
		} else {
			q.swapLimiter(0)
		}
	}
}
