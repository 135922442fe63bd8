package dns

import (
	"net/netip"
	"strings"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
)

// Reverse zones the server is authoritative for, as kubeadm's Corefile
// lists them after the cluster domain.
const (
	reverseV4 = "in-addr.arpa."
	reverseV6 = "ip6.arpa."
)

// maxCNAMEChain bounds the chase of ExternalName Services that point at
// other names of the zone.
const maxCNAMEChain = 8

// result is the answer to one question, before it becomes a message.
type result struct {
	rcode  int
	answer []dns.RR
	extra  []dns.RR
	// zone is the zone that answered ("" for a name outside every zone):
	// its SOA goes in the authority section of a negative answer.
	zone string
	// outside marks a name the server has no authority for.
	outside bool
}

// nodata is the answer for a name that exists (it has records, or names
// below it) but no records of the asked type; nxdomain for a name that
// does not exist. zoneName's SOA goes with either.
func (z *zone) nodata(zoneName string) result { return result{rcode: dns.RcodeSuccess, zone: zoneName} }
func (z *zone) nxdomain(zoneName string) result {
	return result{rcode: dns.RcodeNameError, zone: zoneName}
}

// zone answers questions from the cache.
type zone struct {
	domain string // "cluster.local.", lower case, fully qualified
	ttl    uint32
	cache  *cache
}

// resolve answers a question. qname is lower case and fully qualified.
func (z *zone) resolve(qname string, qtype uint16) result {
	switch {
	case dns.IsSubDomain(z.domain, qname):
		r := z.resolveCluster(qname, qtype)
		return z.chase(r, qtype, 0)
	case dns.IsSubDomain(reverseV4, qname):
		return z.resolveReverse(qname, qtype, reverseV4)
	case dns.IsSubDomain(reverseV6, qname):
		return z.resolveReverse(qname, qtype, reverseV6)
	}
	return result{rcode: dns.RcodeServerFailure, outside: true}
}

// chase follows a CNAME to a name of the cluster domain, as CoreDNS does
// for an ExternalName Service that points inside the cluster; a target
// outside the zone is left to the client, which klab cannot resolve either.
func (z *zone) chase(r result, qtype uint16, depth int) result {
	if qtype == dns.TypeCNAME || len(r.answer) == 0 || depth >= maxCNAMEChain {
		return r
	}
	cname, ok := r.answer[len(r.answer)-1].(*dns.CNAME)
	if !ok || !dns.IsSubDomain(z.domain, cname.Target) {
		return r
	}
	next := z.resolveCluster(cname.Target, qtype)
	next.answer = append(r.answer, next.answer...)
	return z.chase(next, qtype, depth+1)
}

// resolveCluster answers a name of the cluster domain.
func (z *zone) resolveCluster(qname string, qtype uint16) result {
	rel := strings.TrimSuffix(strings.TrimSuffix(qname, z.domain), ".")
	var labels []string
	if rel != "" {
		labels = strings.Split(rel, ".")
	}
	n := len(labels)
	switch {
	case n == 0:
		return z.apex(qname, qtype)
	case n == 1 && labels[0] == "dns-version":
		if qtype != dns.TypeTXT && qtype != dns.TypeANY {
			return z.nodata(z.domain)
		}
		txt := &dns.TXT{Hdr: z.hdr(qname, dns.TypeTXT), Txt: []string{SchemaVersion}}
		return result{answer: []dns.RR{txt}, zone: z.domain}
	case n == 1 && labels[0] == "dns", n == 2 && labels[0] == "ns" && labels[1] == "dns":
		return z.nameserver(qname, qtype, n == 2)
	case labels[n-1] == "svc":
		return z.resolveService(qname, qtype, labels[:n-1])
	case labels[n-1] == "pod":
		return z.resolvePod(qname, qtype, labels[:n-1])
	}
	return z.nxdomain(z.domain)
}

// apex answers the zone's own name: its SOA and NS.
func (z *zone) apex(qname string, qtype uint16) result {
	var r result
	r.zone = z.domain
	if qtype == dns.TypeSOA || qtype == dns.TypeANY {
		r.answer = append(r.answer, z.soa(z.domain))
	}
	if qtype == dns.TypeNS || qtype == dns.TypeANY {
		r.answer = append(r.answer, &dns.NS{Hdr: z.hdr(qname, dns.TypeNS), Ns: z.nsName()})
		r.extra = append(r.extra, z.addressRecords(z.nsName(), dns.TypeANY, z.nameserverIPs())...)
	}
	return r
}

// nameserver answers ns.dns.<zone> (the NS record's target, at the
// kube-dns Service's ClusterIPs) and dns.<zone>, an empty non-terminal.
func (z *zone) nameserver(qname string, qtype uint16, target bool) result {
	if !target {
		return z.nodata(z.domain)
	}
	answer := z.addressRecords(qname, qtype, z.nameserverIPs())
	if len(answer) == 0 {
		return z.nodata(z.domain)
	}
	return result{answer: answer, zone: z.domain}
}

func (z *zone) nsName() string { return "ns.dns." + z.domain }

func (z *zone) nameserverIPs() []netip.Addr {
	if svc := z.cache.service("kube-system", ServiceName); svc != nil {
		return clusterIPs(svc)
	}
	return nil
}

// resolveService answers the names under svc.<zone>; labels are the ones
// before "svc", the namespace last.
func (z *zone) resolveService(qname string, qtype uint16, labels []string) result {
	n := len(labels)
	switch n {
	case 0: // svc.<zone>
		return z.nodata(z.domain)
	case 1: // <ns>.svc.<zone>
		if z.cache.namespaceHasServices(labels[0]) {
			return z.nodata(z.domain)
		}
		return z.nxdomain(z.domain)
	}
	ns, name := labels[n-1], labels[n-2]
	svc := z.cache.service(ns, name)
	if svc == nil {
		return z.nxdomain(z.domain)
	}
	switch n {
	case 2: // <svc>.<ns>.svc.<zone>
		return z.serviceRecords(qname, qtype, svc)
	case 3:
		if strings.HasPrefix(labels[0], "_") { // _<proto>.<svc>...: on the way to SRV names
			if z.srvRecords(qname, "", labels[0], svc) != nil {
				return z.nodata(z.domain)
			}
			return z.nxdomain(z.domain)
		}
		return z.endpointRecords(qname, qtype, svc, labels[0])
	case 4:
		if !strings.HasPrefix(labels[0], "_") || !strings.HasPrefix(labels[1], "_") {
			return z.nxdomain(z.domain)
		}
		srv := z.srvRecords(qname, labels[0], labels[1], svc)
		if len(srv) == 0 {
			return z.nxdomain(z.domain)
		}
		if qtype != dns.TypeSRV && qtype != dns.TypeANY {
			return z.nodata(z.domain)
		}
		r := result{zone: z.domain}
		targets := map[string]bool{}
		for _, s := range srv {
			r.answer = append(r.answer, s.rr)
			if !targets[s.rr.Target] {
				targets[s.rr.Target] = true
				r.extra = append(r.extra, z.addressRecords(s.rr.Target, dns.TypeANY, s.addrs)...)
			}
		}
		return r
	}
	return z.nxdomain(z.domain)
}

// serviceRecords answers <svc>.<ns>.svc.<zone>.
func (z *zone) serviceRecords(qname string, qtype uint16, svc *corev1.Service) result {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		target := dns.Fqdn(strings.ToLower(svc.Spec.ExternalName))
		if _, ok := dns.IsDomainName(target); !ok || svc.Spec.ExternalName == "" {
			return z.nodata(z.domain)
		}
		return result{answer: []dns.RR{&dns.CNAME{Hdr: z.hdr(qname, dns.TypeCNAME), Target: target}}, zone: z.domain}
	}
	var addrs []netip.Addr
	if headless(svc) {
		for _, e := range z.cache.readyEndpoints(svc.Namespace, svc.Name) {
			addrs = append(addrs, e.addrs...)
		}
		if len(addrs) == 0 {
			// The specification: a headless Service without ready
			// endpoints answers NXDOMAIN.
			return z.nxdomain(z.domain)
		}
	} else {
		addrs = clusterIPs(svc)
	}
	answer := z.addressRecords(qname, qtype, addrs)
	if len(answer) == 0 {
		return z.nodata(z.domain)
	}
	return result{answer: answer, zone: z.domain}
}

// endpointRecords answers <hostname>.<svc>.<ns>.svc.<zone>, which exists
// for the ready endpoints of a headless Service.
func (z *zone) endpointRecords(qname string, qtype uint16, svc *corev1.Service, hostname string) result {
	if !headless(svc) {
		return z.nxdomain(z.domain)
	}
	var addrs []netip.Addr
	for _, e := range z.cache.readyEndpoints(svc.Namespace, svc.Name) {
		if e.hostname == hostname {
			addrs = append(addrs, e.addrs...)
		}
	}
	if len(addrs) == 0 {
		return z.nxdomain(z.domain)
	}
	answer := z.addressRecords(qname, qtype, addrs)
	if len(answer) == 0 {
		return z.nodata(z.domain)
	}
	return result{answer: answer, zone: z.domain}
}

// srv is one SRV record and the addresses of its target.
type srv struct {
	rr    *dns.SRV
	addrs []netip.Addr
}

// srvRecords returns the SRV records of _<port>._<proto>.<svc>; an empty
// port label matches every named port of the protocol.
func (z *zone) srvRecords(qname, portLabel, protoLabel string, svc *corev1.Service) []srv {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	port, proto := strings.TrimPrefix(portLabel, "_"), strings.TrimPrefix(protoLabel, "_")
	match := func(name string, p corev1.Protocol) bool {
		if p == "" {
			p = corev1.ProtocolTCP
		}
		return name != "" && (port == "" || strings.EqualFold(name, port)) && strings.EqualFold(string(p), proto)
	}
	svcName := svc.Name + "." + svc.Namespace + ".svc." + z.domain
	var out []srv
	if !headless(svc) {
		for _, p := range svc.Spec.Ports {
			if match(p.Name, p.Protocol) {
				out = append(out, srv{rr: &dns.SRV{Hdr: z.hdr(qname, dns.TypeSRV), Priority: 0, Weight: 100, Port: uint16(p.Port), Target: svcName}, addrs: clusterIPs(svc)})
			}
		}
		return out
	}
	for _, e := range z.cache.readyEndpoints(svc.Namespace, svc.Name) {
		for _, p := range e.ports {
			proto := corev1.ProtocolTCP
			if p.Protocol != nil {
				proto = *p.Protocol
			}
			if p.Name == nil || p.Port == nil || !match(*p.Name, proto) {
				continue
			}
			target := e.hostname + "." + svcName
			out = append(out, srv{rr: &dns.SRV{Hdr: z.hdr(qname, dns.TypeSRV), Priority: 0, Port: uint16(*p.Port), Target: target}, addrs: e.addrs})
		}
	}
	// Equal shares of the weight, as RFC 2782 reads for equal targets.
	for _, s := range out {
		s.rr.Weight = uint16(100 / len(out))
	}
	return out
}

// resolvePod answers <a>-<b>-<c>-<d>.<ns>.pod.<zone> for any address,
// as kubeadm's "pods insecure" does; labels are the ones before "pod".
func (z *zone) resolvePod(qname string, qtype uint16, labels []string) result {
	switch len(labels) {
	case 0, 1: // pod.<zone>, <ns>.pod.<zone>: names exist below them
		return z.nodata(z.domain)
	case 2:
		ip, ok := undashed(labels[0])
		if !ok {
			return z.nxdomain(z.domain)
		}
		answer := z.addressRecords(qname, qtype, []netip.Addr{ip})
		if len(answer) == 0 {
			return z.nodata(z.domain)
		}
		return result{answer: answer, zone: z.domain}
	}
	return z.nxdomain(z.domain)
}

// resolveReverse answers PTR queries for ClusterIPs and for the ready
// endpoints of headless Services.
func (z *zone) resolveReverse(qname string, qtype uint16, rzone string) result {
	if qname == rzone {
		return z.reverseApex(qname, qtype, rzone)
	}
	ip, ok := reverseIP(qname)
	if !ok {
		// A partial name such as 10.in-addr.arpa: whether any cluster
		// address lies below it is not worth a scan; it has no records.
		return z.nxdomain(rzone)
	}
	var targets []string
	for _, svc := range z.cache.servicesByIP(ip) {
		targets = append(targets, svc.Name+"."+svc.Namespace+".svc."+z.domain)
	}
	for _, o := range z.cache.endpointOwners(ip) {
		targets = append(targets, o.ep.hostname+"."+o.service+"."+o.ns+".svc."+z.domain)
	}
	if len(targets) == 0 {
		return z.nxdomain(rzone)
	}
	if qtype != dns.TypePTR && qtype != dns.TypeANY {
		return z.nodata(rzone)
	}
	r := result{zone: rzone}
	for _, t := range targets {
		r.answer = append(r.answer, &dns.PTR{Hdr: z.hdr(qname, dns.TypePTR), Ptr: t})
	}
	return r
}

func (z *zone) reverseApex(qname string, qtype uint16, rzone string) result {
	r := result{zone: rzone}
	if qtype == dns.TypeSOA || qtype == dns.TypeANY {
		r.answer = append(r.answer, z.soa(rzone))
	}
	if qtype == dns.TypeNS || qtype == dns.TypeANY {
		r.answer = append(r.answer, &dns.NS{Hdr: z.hdr(qname, dns.TypeNS), Ns: z.nsName()})
	}
	return r
}

// reverseIP reads the address of a full in-addr.arpa or ip6.arpa name.
func reverseIP(qname string) (netip.Addr, bool) {
	if rest, ok := strings.CutSuffix(qname, "."+reverseV4); ok {
		parts := strings.Split(rest, ".")
		if len(parts) != 4 {
			return netip.Addr{}, false
		}
		for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
			parts[i], parts[j] = parts[j], parts[i]
		}
		ip, err := netip.ParseAddr(strings.Join(parts, "."))
		return ip, err == nil && ip.Is4()
	}
	if rest, ok := strings.CutSuffix(qname, "."+reverseV6); ok {
		nibbles := strings.Split(rest, ".")
		if len(nibbles) != 32 {
			return netip.Addr{}, false
		}
		var b strings.Builder
		for i := len(nibbles) - 1; i >= 0; i-- {
			if len(nibbles[i]) != 1 {
				return netip.Addr{}, false
			}
			b.WriteString(nibbles[i])
			if i%4 == 0 && i > 0 {
				b.WriteByte(':')
			}
		}
		ip, err := netip.ParseAddr(b.String())
		return ip, err == nil && ip.Is6()
	}
	return netip.Addr{}, false
}

// addressRecords returns the A records (qtype A) or AAAA records (qtype
// AAAA) of name among addrs; both for ANY.
func (z *zone) addressRecords(name string, qtype uint16, addrs []netip.Addr) []dns.RR {
	var out []dns.RR
	for _, a := range addrs {
		switch {
		case a.Is4() && (qtype == dns.TypeA || qtype == dns.TypeANY):
			out = append(out, &dns.A{Hdr: z.hdr(name, dns.TypeA), A: a.AsSlice()})
		case a.Is6() && !a.Is4In6() && (qtype == dns.TypeAAAA || qtype == dns.TypeANY):
			out = append(out, &dns.AAAA{Hdr: z.hdr(name, dns.TypeAAAA), AAAA: a.AsSlice()})
		}
	}
	return out
}

func (z *zone) hdr(name string, t uint16) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: z.ttl}
}

// soa is the SOA record of zone (the cluster domain or a reverse zone).
// Its minimum, the TTL of negative answers, is the records' TTL.
func (z *zone) soa(zoneName string) *dns.SOA {
	return &dns.SOA{
		Hdr: z.hdr(zoneName, dns.TypeSOA),
		Ns:  z.nsName(), Mbox: "hostmaster." + z.domain,
		Serial: z.cache.serial(), Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: z.ttl,
	}
}
