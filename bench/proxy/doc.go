// Package proxybench measures klab's kube-proxy modes (cluster/proxy/proxier)
// as clusters grow: how long a full rule sync and a resync after one endpoint
// changed take, how many rules each mode programs, and what one new
// connection pays to find its endpoint, for every mode at every cluster size
// in one run.
//
// The services are real corev1.Service and discoveryv1.EndpointSlice objects
// turned into a snapshot by proxier.BuildSnapshot, as the proxy's informers
// would hand them over. The modes keep the data structures their upstream
// counterparts keep (rule chains walked in order for iptables, a hash table
// of virtual servers for ipvs, verdict maps for nftables, a map of
// round-robin balancers for userspace), so the growth the tables show is
// measured, not modelled: nothing in this package knows how a mode is
// expected to scale.
//
// Command proxybench (cmd/proxybench) runs it and prints the figures as a
// Markdown table, or as JSON with -o json.
package proxybench
