// Package apiserverbench measures klab's API server the way its clients
// use it: client-go over HTTPS with bearer tokens, in front of real klab
// etcd members on loopback sockets (package apiservertest). Each benchmark
// runs on four topologies — 1 or 3 etcd members, 1 or 3 API servers — and
// reports the median and 99th-percentile latency of single operations
// (p50-ms, p99-ms) beside Go's mean ns/op.
//
// The package has benchmarks only, so a plain `go test` costs nothing;
// run them with
//
//	go test -run '^$' -bench 'Create|Apply|Get|List1000$|WatchDelivery' -benchtime 2s ./bench/apiserver/
//	go test -run '^$' -bench 'List10000' -benchtime 20x ./bench/apiserver/
//
// (a list of 10,000 pods takes most of a second, so it is timed over a
// fixed count rather than a duration).
package apiserverbench
