// Package traffic sends requests to a Service through one node's kube-proxy
// and counts which pod answered each of them: the numbers behind
// `klab traffic` and the UI's distribution chart.
//
// # One request
//
// Every request is a fresh TCP connection, because a kube-proxy chooses an
// endpoint per connection, not per request:
//
//  1. dial the kube-proxy's HTTP entrance (stage "dial");
//  2. ask it for a tunnel with `CONNECT <clusterIP:port> HTTP/1.1`. The proxy
//     picks an endpoint as its mode would (userspace, iptables, ipvs,
//     nftables), dials it and answers 200 with the headers Klab-Proxy-Mode,
//     Klab-Endpoint and Klab-Node, or 503/404 with a line saying why (stage
//     "connect");
//  3. send `GET /?format=json` through the tunnel; the demo app answers with
//     its pod, namespace, node and pod IP (stage "http").
//
// The latency of a request runs from the start of the dial to the last byte
// of the app's answer.
//
// # Reading the report
//
// Pods lists each pod that answered, with its share of the successful
// requests. Round-robin modes (userspace, ipvs with rr) give every pod the
// same count; iptables and nftables choose at random, so their counts wobble
// around an even split. The chi-square test says whether the wobble is what
// chance alone would give: a p-value near 1 means "as even as a fair random
// choice", a tiny one (below UnevenPValue) means the proxy prefers some pods.
// Pods that never answered are not in Pods and so not in the test; their
// failures are in Failures, grouped by reason.
package traffic
