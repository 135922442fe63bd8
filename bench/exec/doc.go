// Package execbench measures kubectl's streams into a pod on a local
// cluster started as klab up starts it (one master, one worker), with
// client-go's executors and port-forwarder, the code kubectl runs:
//
//   - BenchmarkExecRoundTrip: `kubectl exec <pod> -- echo hi`, from the
//     request to the exit status, over WebSockets (API server translating
//     to the kubelet's SPDY) and over SPDY end to end; p50 and p99;
//   - BenchmarkPortForwardThroughput: MB/s through one forwarded
//     connection, over the WebSocket tunnel and over SPDY. The bytes come
//     from a sender the benchmark listens with on the pod's IP (local pods
//     are addresses of the klab process), so the figure is the forwarding
//     path's (API server, kubelet, streams), not an app's.
//
// Run with `make bench`, or:
//
//	go test -run '^$' -bench . -benchtime 200x ./bench/exec/
package execbench
