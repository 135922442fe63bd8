// Package scheduler is klab's kube-scheduler. It watches the API server for
// pods that have no node and picks one for each, the way upstream's
// kube-scheduler does, and it leaves a record of every choice that a
// student can read.
//
// # Queue
//
// Informers feed two things. Pods already bound to a node, and the nodes
// themselves, go to the cache (internal/cache): the scheduler's picture of
// what every node runs and has left. Pods without a node whose
// .spec.schedulerName is default-scheduler go to the scheduling queue
// (internal/queue). A waiting pod sits in activeQ (highest .spec.priority
// first, then the longest waiting), in podBackoffQ (it failed a moment ago
// and waits out a backoff of 1 s doubling to 10 s, divided by the lab's
// speed), or in unschedulablePods (no node fitted; it waits for a change
// in the cluster that could help: a node added, a node's labels, taints or
// allocatable changed, a bound pod deleted; or for five minutes).
//
// # Cycle
//
// Only the leader schedules: every scheduler campaigns for the Lease
// kube-system/kube-scheduler (15 s lease, 10 s renew deadline, 2 s retry,
// divided by the speed), and a scheduler that loses it stops with
// "leaderelection lost", as upstream's exits. The leader pops one pod at a
// time and runs a scheduling cycle on a snapshot of the cache: the
// profile's PreFilter plugins, then the Filter plugins for every node in
// parallel (each node keeps the first plugin that rejects it), then
// PreScore and Score on the nodes that passed. Each score plugin's scores
// are normalised to 0..100, multiplied by the plugin's weight and summed;
// the highest total wins, ties broken at random. In clusters of 100 nodes
// or more a cycle stops looking once it has found enough feasible nodes,
// as upstream does.
//
// # Bind
//
// The chosen node is assumed in the cache at once, so the next cycle
// already counts the pod there, and a goroutine binds the pod through the
// pods/binding subresource, the binding cycle. A Scheduled event follows
// ("Successfully assigned default/web to worker-2"). If no node fits, the
// pod gets the condition PodScheduled=False with reason Unschedulable and
// a FailedScheduling event, both saying why in upstream's words: "0/3
// nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's
// node affinity/selector. preemption: 0/3 nodes are available: 1 No
// preemption victims found for incoming pod, 2 Preemption is not helpful
// for scheduling." The tail is preemption's (preemption.go). Upstream's
// default profile also runs the DynamicResources PostFilter, which klab
// does not serve, so its "no new claims to deallocate, " never precedes
// "preemption:".
//
// # Reading a decision
//
// Every attempt leaves a Decision: what each plugin said about each node,
// each score raw, normalised and weighted, the ranking and the result.
// The last ones are served at /debug/klab/decisions and streamed at
// /debug/klab/events. A summary is written on the pod itself, so that
// kubectl get pod -o yaml shows it:
//
//	klab.dev/scheduled-node: worker-2
//	klab.dev/filter: |-
//	  worker-1: NodeResourcesFit: Insufficient cpu
//	  worker-2: passed
//	  worker-3: TaintToleration: node(s) had untolerated taint {dedicated: gpu}
//	klab.dev/score: |-
//	  worker-2 (chosen): total 187 = NodeResourcesFit 77×1 + ImageLocality 10×1 + ...
//
// klab.dev/filter has a line per node: "passed", or the filter plugin that
// rejected the node and its reasons. klab.dev/score has a line per scored
// node, best first: the total, then each plugin's normalised score times
// its weight. A pod that fits only one node is not scored (upstream skips
// scoring then), and an unschedulable pod has klab.dev/filter alone. Each
// annotation lists at most 20 nodes; the decision record has them all.
// A scheduled pod's annotations travel in the Binding, which the API
// server copies onto the pod with its node name.
package scheduler
