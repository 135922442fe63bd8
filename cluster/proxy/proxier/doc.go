// Package proxier is the core of klab's kube-proxy: the four proxy modes
// (userspace, iptables, ipvs, nftables) as pure data structures, without
// informers, sockets or a cluster.
//
// The flow follows upstream's pkg/proxy. BuildSnapshot turns the Services and
// EndpointSlices a kube-proxy sees into the proxy's own view: one ServiceInfo
// and a sorted list of Endpoints per ServicePortName ("ns/name:port"), with the
// ready, serving and terminating conditions and whether each endpoint runs on
// this node. A Mode's Sync rebuilds everything that mode would program from
// that snapshot and reports how long it took and how many rules it wrote.
//
// Each mode keeps the data structure the real one keeps, and answers Pick (the
// endpoint one new connection reaches) by walking it:
//
//   - iptables writes upstream's chains (KUBE-SERVICES, KUBE-SVC-<hash>,
//     KUBE-SEP-<hash>, KUBE-EXT-<hash>, KUBE-NODEPORTS, KUBE-MARK-MASQ, ...) and
//     evaluates them as netfilter does: rule after rule, from PREROUTING,
//     jumping into chains, drawing a random number for each
//     "-m statistic --mode random --probability p" rule with the kernel's
//     31-bit threshold. Finding a service costs one rule per service ahead of
//     it in KUBE-SERVICES: the cost is linear in the number of services.
//   - ipvs keeps virtual servers in a hash table, each with real servers and a
//     scheduler (rr, lc, dh, sh, sed, nq) that behaves as the kernel's does.
//   - nftables keeps upstream's "ip kube-proxy" table: the service-ips and
//     service-nodeports verdict maps send a packet straight to the service's
//     chain, whose "numgen random mod N vmap" picks the endpoint chain.
//   - userspace round-robins in the proxy process, remembers ClientIP session
//     affinity, and is the only mode that retries another endpoint when a
//     dial fails (Userspace.Connect).
//
// Render writes what the mode would program, in the format of the tool a
// student would run on a real node: iptables-save, ipvsadm -Ln or
// nft list ruleset. Cleanup drops every rule and every piece of state, as
// kube-proxy --cleanup does when the mode changes.
//
// klab emulates the data path in user space; what is faithful is the
// selection: the structures, the order of evaluation and the randomness are
// the real ones, so traffic spreads as it would on a real node and the lookup
// cost grows as it would.
package proxier
