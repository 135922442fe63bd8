package proxier

import (
	"math/rand/v2"
	"net/netip"
	"time"
)

// nftChain is a chain of the kube-proxy table. Base chains have a header
// (type, hook, priority); regular chains are only reached by jump or goto.
type nftChain struct {
	name    string
	header  string
	comment string
	rules   []nftRule
}

// nftRuleKind says how a rule is evaluated. Each kind is one of the rule
// shapes upstream writes; the rule's text is what nft list ruleset prints.
type nftRuleKind int

const (
	nftRuleStatic              nftRuleKind = iota // not on the path of a new connection's DNAT
	nftRuleJump                                   // [ct state new | ip saddr X] jump chain
	nftRuleGoto                                   // goto chain
	nftRuleServiceIPs                             // ip daddr . meta l4proto . th dport vmap @service-ips
	nftRuleServiceNodePorts                       // fib daddr type local ... vmap @service-nodeports
	nftRuleNoEndpointServices                     // ... vmap @no-endpoint-services
	nftRuleNoEndpointNodePorts                    // ... vmap @no-endpoint-nodeports
	nftRuleClusterIPsReject                       // ip daddr @cluster-ips reject
	nftRuleMasqNotFromPods                        // ip daddr D dport P ip saddr != CIDR jump mark-for-masquerade
	nftRuleGotoFromPods                           // ip saddr CIDR goto service-...
	nftRuleMasqFromLocal                          // fib saddr type local jump mark-for-masquerade
	nftRuleGotoFromLocal                          // fib saddr type local goto service-...
	nftRuleAffinityCheck                          // ip saddr @affinity-... goto endpoint-...
	nftRuleAffinityUpdate                         // update @affinity-... { ip saddr }
	nftRuleNumgen                                 // numgen random mod N vmap { i : goto endpoint-... }
	nftRuleDNAT                                   // meta l4proto tcp dnat to ip:port
	nftRuleReject                                 // reject
	nftVerdictDrop                                // a drop verdict from a map (not a rule)
)

type nftRule struct {
	kind        nftRuleKind
	text        string
	targetName  string
	target      *nftChain
	targetNames []string
	targets     []*nftChain
	prefix      netip.Prefix
	src         netip.Addr
	hasSrc      bool
	set         *nftAffinitySet
	ep          Endpoint
}

// link resolves the chains the rule jumps or goes to.
func (r *nftRule) link(s *nftState) {
	if r.targetName != "" {
		r.target = s.byName[r.targetName]
	}
	if len(r.targetNames) > 0 {
		r.targets = make([]*nftChain, len(r.targetNames))
		for i, n := range r.targetNames {
			r.targets[i] = s.byName[n]
		}
	}
}

// nftEval is the first packet of a connection going through the table.
type nftEval struct {
	state              *nftState
	now                time.Time
	rng                *rand.Rand
	cidr               netip.Prefix
	src, dst           netip.Addr
	proto              string
	dport              uint16
	srcLocal, dstLocal bool
	// nodeIP is this node's primary address.
	nodeIP netip.Addr
}

// loopback reports whether the packet is addressed to the loopback network
// (the rules written "ip daddr != 127.0.0.0/8"). The node's own primary
// address never is: in klab's local runtime a node's address is a loopback
// alias (127.A.B.x) standing in for the address of a real interface.
func (e *nftEval) loopback() bool {
	return loopbackNet.Contains(e.dst) && e.dst != e.nodeIP
}

// nftResult is a terminal verdict: DNAT (with the endpoint), reject or drop.
type nftResult struct {
	kind nftRuleKind
	ep   Endpoint
}

var loopbackNet = netip.MustParsePrefix("127.0.0.0/8")

// run evaluates a chain. A jump comes back unless the chain it entered
// reached a verdict; a goto (from a rule or a verdict map) replaces the rest
// of this chain with the other one.
func (e *nftEval) run(c *nftChain) (nftResult, bool) {
	if c == nil {
		return nftResult{}, false
	}
	for i := range c.rules {
		r := &c.rules[i]
		switch r.kind {
		case nftRuleJump:
			if r.hasSrc && r.src != e.src {
				continue
			}
			if res, done := e.run(r.target); done {
				return res, true
			}
		case nftRuleGoto:
			return e.run(r.target)
		case nftRuleServiceIPs:
			if v, ok := e.state.serviceIPs[nftKey{e.dst, e.proto, e.dport}]; ok {
				return e.verdict(v)
			}
		case nftRuleServiceNodePorts:
			if e.dstLocal && !e.loopback() {
				if v, ok := e.state.serviceNodePorts[nftPortKey{e.proto, e.dport}]; ok {
					return e.verdict(v)
				}
			}
		case nftRuleNoEndpointServices:
			if v, ok := e.state.noEndpointServices[nftKey{e.dst, e.proto, e.dport}]; ok {
				return e.verdict(v)
			}
		case nftRuleNoEndpointNodePorts:
			if !e.loopback() {
				if v, ok := e.state.noEndpointNodePorts[nftPortKey{e.proto, e.dport}]; ok {
					return e.verdict(v)
				}
			}
		case nftRuleClusterIPsReject:
			if _, ok := e.state.clusterIPs[e.dst]; ok {
				return nftResult{kind: nftRuleReject}, true
			}
		case nftRuleGotoFromPods:
			if r.prefix.Contains(e.src) {
				return e.run(r.target)
			}
		case nftRuleGotoFromLocal:
			if e.srcLocal {
				return e.run(r.target)
			}
		case nftRuleAffinityCheck:
			if expires, ok := r.set.elements[e.src]; ok {
				if e.now.Before(expires) {
					return e.run(r.target)
				}
				delete(r.set.elements, e.src)
			}
		case nftRuleAffinityUpdate:
			r.set.elements[e.src] = e.now.Add(r.set.timeout)
		case nftRuleNumgen:
			// The kernel's reciprocal_scale: a 32-bit random number scaled to
			// [0, N) by a multiply and a shift.
			n := uint64(len(r.targets))
			return e.run(r.targets[(uint64(random32(e.rng))*n)>>32])
		case nftRuleDNAT:
			return nftResult{kind: nftRuleDNAT, ep: r.ep}, true
		case nftRuleReject:
			return nftResult{kind: nftRuleReject}, true
		}
	}
	return nftResult{}, false
}

func (e *nftEval) verdict(v nftVerdict) (nftResult, bool) {
	if v.drop {
		return nftResult{kind: nftVerdictDrop}, true
	}
	return e.run(v.chain)
}

// Pick sends the first packet of a connection through the table's hooks
// in order: prerouting (filter, then nat, where the services chain looks the
// destination up in the service-ips or service-nodeports map), then input or
// forward, where the no-endpoint maps reject or drop it.
func (m *NFTables) Pick(svc ServicePortName, clientIP string, via EntryKind, rng *rand.Rand) (Endpoint, error) {
	src, err := parseClientIP(clientIP)
	if err != nil {
		return Endpoint{}, pickError(svc, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state == nil {
		return Endpoint{}, pickError(svc, ErrServiceNotFound)
	}
	info, ok := m.state.services[svc]
	if !ok {
		return Endpoint{}, pickError(svc, ErrServiceNotFound)
	}
	e := &nftEval{state: m.state, now: m.cfg.Now(), rng: rng, cidr: m.cfg.ClusterCIDR,
		src: src, dst: info.ClusterIP, proto: svc.protocol(), dport: uint16(info.Port), nodeIP: m.cfg.NodeIP}
	e.srcLocal = src == m.cfg.NodeIP || src.IsLoopback()
	filterHook := "filter-forward"
	if via == ViaNodePort {
		if info.NodePort == 0 {
			return Endpoint{}, pickError(svc, ErrNoNodePort)
		}
		e.dst, e.dport, e.dstLocal = m.cfg.NodeIP, uint16(info.NodePort), true
		filterHook = "filter-input"
	}
	for _, hook := range []string{"filter-prerouting", "nat-prerouting", filterHook} {
		v, _ := e.run(m.state.byName[hook])
		switch v.kind {
		case nftRuleDNAT:
			return v.ep, nil
		case nftRuleReject:
			return Endpoint{}, pickError(svc, ErrNoEndpoints)
		case nftVerdictDrop:
			return Endpoint{}, pickError(svc, ErrNoLocalEndpoints)
		}
	}
	return Endpoint{}, pickError(svc, ErrServiceNotFound)
}

// Cleanup deletes the table (nft delete table ip kube-proxy) and with it
// every set, map and chain.
func (m *NFTables) Cleanup() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state = nil
	m.affinity = make(map[string]*nftAffinitySet)
}
