// Package controlloopbench measures klab's control loop as upstream's
// scheduler-perf and kubemark density tests do: many nodes, each a real
// kubelet talking to the real API server (with an in-memory container
// runtime instead of containers, as kubemark's hollow nodes have), one real
// scheduler with the default plugins, and a burst of pods. It reports the
// scheduling throughput (pods bound per second) and the pod startup
// latency (creation to Running, as the SLO defines it) at p50 and p99.
//
// Run it with make bench, or:
//
//	go test -run '^$' -bench . -benchtime 1x ./bench/controlloop/
package controlloopbench
