// Package nodelifecycle is klab's node lifecycle controller and taint
// eviction controller, the two controllers of kube-controller-manager that
// decide what happens to a node that stops talking and to the pods on it.
//
// A kubelet proves it is alive in two ways: it renews its Lease in the
// kube-node-lease namespace (every NodeLeaseRenewInterval) and it posts the
// node's status with a fresh Ready condition heartbeat. The node lifecycle
// controller ("nodelifecycle") looks at every node each NodeMonitorPeriod.
// It does not compare those timestamps with its own clock (clocks on
// different machines disagree); it remembers, in its own clock, when it last
// saw either of them change (the probe timestamp). A node whose probe
// timestamp is older than NodeMonitorGracePeriod (NodeStartupGracePeriod for
// a node that never posted a Ready condition) gets its Ready,
// MemoryPressure, DiskPressure and PIDPressure conditions set to Unknown
// with reason NodeStatusUnknown, a NodeNotReady event, and the Ready
// condition of each of its pods set to False (so Services stop sending them
// traffic).
//
// One monitor period later the controller sees the Unknown node and queues
// it for the NoExecute taint node.kubernetes.io/unreachable (a node that
// itself reports Ready=False gets node.kubernetes.io/not-ready instead). The
// queue is rate limited per zone (--node-eviction-rate, 0.1 nodes per
// second), and the rate depends on how much of the zone is down: if every
// node of every zone is not ready, the controller suspects itself or the
// network rather than the nodes ("master disruption mode"), removes the
// taints and taints nothing; a small zone (up to 50 nodes) in which at least
// 55% of the nodes (and more than two) are not ready is not tainted either.
// When the node reports Ready again, the taints go.
//
// It also keeps NoSchedule taints in step with the node's conditions
// (not-ready, unreachable, memory-pressure, disk-pressure, pid-pressure,
// network-unavailable) and with spec.unschedulable, so that the scheduler
// keeps new pods off such nodes.
//
// The taint eviction controller ("taint-eviction-controller") acts on
// NoExecute taints, whoever set them: a pod that does not tolerate one is
// deleted at once; a pod that tolerates it for tolerationSeconds is deleted
// that long after the controller saw the taint (upstream counts from then,
// not from the taint's timeAdded), unless the taint goes first. Every pod
// the API server admits gets tolerations for not-ready and unreachable of
// DefaultTolerationPeriod (300 s), which is why pods leave a dead node five
// minutes after it is tainted.
//
// Every duration and rate here is Kubernetes' default divided by the lab's
// speed factor. Where klab is simpler than upstream: nodes are checked one
// after another rather than by eight workers in parallel, and the beta
// os/arch node labels are not reconciled.
package nodelifecycle
