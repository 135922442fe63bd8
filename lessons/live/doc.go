// Package live runs lessons against a real cluster: it turns what the
// cluster reports into the lesson engine's observations, and checks a
// lesson end to end by running its solutions on a fresh cluster.
//
// Convert maps one observation of cluster/lab's Observer (an etcd member's
// status, one of its raft events, or the news that it stopped answering)
// to the lessons package's observations, as lessons.Observation documents.
//
// A Feed is every source a check can read, merged into one stream of
// batches: the Observer of the etcd members, informers on the Kubernetes
// nodes and pods, and etcd watches of the keys the current step's check
// names. Nothing is polled by the Feed itself; it hands on what the
// sources report, in batches so that a reader (the TUI) redraws once per
// batch rather than once per raft message.
//
// CheckLesson is `klab lessons check`: it starts a cluster in the lesson's
// shape, runs each step's solution through a Runner (klab's own command
// line, in process), feeds an Evaluator from a Feed and waits, without
// polling, for each step's check to pass. The cluster is removed at the end,
// whatever happened.
package live
