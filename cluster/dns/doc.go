// Package dns is klab's cluster DNS: the server behind the kube-system/kube-dns
// Service, answering the Kubernetes DNS-Based Service Discovery
// specification (github.com/kubernetes/dns, docs/specification.md) on
// github.com/miekg/dns, the library CoreDNS is built on. kubeadm runs CoreDNS
// with its kubernetes plugin in this place; klab runs this smaller server in
// the same role, under the same names (coredns pods labelled
// k8s-app=kube-dns, the kube-dns Service at the tenth service IP, ports
// dns/53 UDP, dns-tcp/53 TCP and metrics/9153).
//
// As CoreDNS's kubernetes plugin does, it watches Services and
// EndpointSlices with client-go informers and answers every query from
// their caches, indexed by name, by ClusterIP and by endpoint address. What
// it answers for the cluster domain (cluster.local by default):
//
//   - dns-version.<zone> TXT: the schema version of the specification;
//   - <svc>.<ns>.svc.<zone> A/AAAA: a Service's ClusterIPs; for a headless
//     Service its ready endpoints' addresses, NXDOMAIN when it has none;
//   - <hostname>.<svc>.<ns>.svc.<zone> A/AAAA: a headless Service's ready
//     endpoint, by its hostname (a StatefulSet's pods) or, for an endpoint
//     without one, by its address written with dashes (10-244-1-5), the
//     identifier CoreDNS gives it;
//   - _<port>._<proto>.<svc>.<ns>.svc.<zone> SRV: one record per named port
//     (per ready endpoint and named port for a headless Service), with the
//     targets' addresses in the additional section;
//   - <svc>.<ns>.svc.<zone> CNAME for an ExternalName Service;
//   - <a>-<b>-<c>-<d>.<ns>.pod.<zone> A: the deprecated pod records, for any
//     address, as kubeadm's "pods insecure" answers them;
//   - PTR in in-addr.arpa and ip6.arpa for every ClusterIP and every ready
//     endpoint of a headless Service;
//   - SOA and NS at the zone's apex.
//
// A name that does not exist is NXDOMAIN; a name that exists (a Service,
// or an empty non-terminal such as svc.<zone> or a namespace that holds
// Services) asked for a type it has no records of is NODATA (NOERROR, no
// answer). Both carry the zone's SOA in the authority section, whose minimum
// TTL tells resolvers how long to cache the negative answer (RFC 2308).
//
// Names outside the cluster domain and the reverse zones: kubeadm's
// CoreDNS forwards them to the node's resolvers. klab runs offline and
// has no upstream to forward to, so the server answers SERVFAIL at once,
// which is what CoreDNS answers when its upstream cannot be reached, with
// an Extended DNS Error (RFC 8914, "No Reachable Authority") whose text
// says why; a client sees a lookup failure instead of waiting for a
// timeout. REFUSED would say the server will not serve the name, which is
// not the case: it would, if it had an upstream.
//
// The server listens on UDP and TCP on the same port and truncates UDP
// answers larger than the client's buffer (512 bytes, or its EDNS0 size),
// so a client retries over TCP. Its HTTP endpoint (the metrics port)
// serves /health and /ready as CoreDNS's health and ready plugins do,
// /metrics, and klab's /debug/klab/status.
package dns
