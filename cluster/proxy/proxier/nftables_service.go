package proxier

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// writeService writes one service port's map elements and chains, following
// upstream's syncProxyRules.
func (m *NFTables) writeService(s *nftState, svc *ServiceInfo, sets endpointSets, affinity map[string]*nftAffinitySet) {
	name := svc.Name.String()
	proto := svc.Name.protocol()
	base := nftServiceBase(svc.Name)
	clusterChain := nftClusterPolicyPrefix + base
	localChain := nftLocalPolicyPrefix + base
	externalChain := nftExternalPrefix + base
	clientIP := svc.SessionAffinity == corev1.ServiceAffinityClientIP

	plan := planTraffic(svc, sets)
	internalChain, externalPolicyChain := clusterChain, clusterChain
	if svc.InternalPolicyLocal {
		internalChain = localChain
	}
	if svc.ExternalPolicyLocal {
		externalPolicyChain = localChain
	}

	rejectOrDrop := func() nftVerdict {
		if !sets.hasAny {
			return nftVerdict{chain: s.chain(nftRejectChain), comment: name}
		}
		return nftVerdict{drop: true, comment: name}
	}

	// Chains first, in the order a reader follows them.
	if plan.usesClusterChain {
		s.chain(clusterChain)
	}
	if plan.usesLocalChain {
		s.chain(localChain)
	}
	if plan.usesExternalChain {
		s.chain(externalChain)
	}
	for _, ep := range sets.reachable {
		s.chain(nftEndpointPrefix + nftEndpointBase(svc.Name, ep))
	}

	s.clusterIPs[svc.ClusterIP] = struct{}{}
	key := nftKey{svc.ClusterIP, proto, uint16(svc.Port)}
	if plan.hasInternal {
		s.serviceIPs[key] = nftVerdict{chain: s.chain(internalChain)}
	} else {
		s.noEndpointServices[key] = rejectOrDrop()
	}
	if svc.NodePort != 0 {
		key := nftPortKey{proto, uint16(svc.NodePort)}
		if sets.hasAny {
			s.serviceNodePorts[key] = nftVerdict{chain: s.chain(externalChain)}
		}
		if !plan.hasExternal {
			s.noEndpointNodePorts[key] = rejectOrDrop()
		}
	}

	if plan.hasInternal && m.cfg.ClusterCIDR.IsValid() {
		s.add(internalChain, nftRule{kind: nftRuleMasqNotFromPods, prefix: m.cfg.ClusterCIDR,
			text: fmt.Sprintf("ip daddr %s %s dport %d ip saddr != %s jump %s",
				svc.ClusterIP, proto, svc.Port, m.cfg.ClusterCIDR, nftMarkMasqChain)})
	}
	if plan.usesExternalChain {
		if !svc.ExternalPolicyLocal {
			s.add(externalChain, nftRule{kind: nftRuleJump, text: "jump " + nftMarkMasqChain, targetName: nftMarkMasqChain})
		} else {
			if m.cfg.ClusterCIDR.IsValid() {
				s.add(externalChain, nftRule{kind: nftRuleGotoFromPods, prefix: m.cfg.ClusterCIDR, targetName: clusterChain,
					text: fmt.Sprintf(`ip saddr %s goto %s comment "short-circuit pod traffic"`, m.cfg.ClusterCIDR, clusterChain)})
			}
			s.add(externalChain, nftRule{kind: nftRuleMasqFromLocal,
				text: `fib saddr type local jump ` + nftMarkMasqChain + ` comment "masquerade local traffic"`})
			s.add(externalChain, nftRule{kind: nftRuleGotoFromLocal, targetName: clusterChain,
				text: `fib saddr type local goto ` + clusterChain + ` comment "short-circuit local traffic"`})
		}
		if plan.hasExternal {
			s.add(externalChain, nftRule{kind: nftRuleGoto, targetName: externalPolicyChain, text: "goto " + externalPolicyChain})
		}
	}

	if clientIP {
		for _, ep := range sets.reachable {
			setName := nftAffinityPrefix + nftEndpointBase(svc.Name, ep)
			set := m.affinity[setName]
			timeout := time.Duration(svc.StickyMaxAgeSeconds) * time.Second
			if set == nil || set.timeout != timeout {
				set = &nftAffinitySet{name: setName, timeout: timeout, elements: make(map[netip.Addr]time.Time)}
			}
			affinity[setName] = set
			s.affinitySets = append(s.affinitySets, set)
		}
	}
	if plan.usesClusterChain {
		m.writeServiceToEndpointRules(s, svc, clusterChain, sets.cluster, affinity)
	}
	if plan.usesLocalChain {
		m.writeServiceToEndpointRules(s, svc, localChain, sets.local, affinity)
	}
	for _, ep := range sets.reachable {
		epBase := nftEndpointBase(svc.Name, ep)
		chain := nftEndpointPrefix + epBase
		s.add(chain, nftRule{kind: nftRuleJump, targetName: nftMarkMasqChain, src: ep.IP, hasSrc: true,
			text: fmt.Sprintf("ip saddr %s jump %s", ep.IP, nftMarkMasqChain)})
		if clientIP {
			set := affinity[nftAffinityPrefix+epBase]
			s.add(chain, nftRule{kind: nftRuleAffinityUpdate, set: set, text: "update @" + set.name + " { ip saddr }"})
		}
		s.add(chain, nftRule{kind: nftRuleDNAT, ep: ep, text: fmt.Sprintf("meta l4proto %s dnat to %s", proto, ep)})
	}
}

// writeServiceToEndpointRules writes a service- or local- chain: affinity
// checks, then one numgen rule whose anonymous verdict map sends the
// connection to endpoint number (random mod N).
func (m *NFTables) writeServiceToEndpointRules(s *nftState, svc *ServiceInfo, chain string, eps []Endpoint, affinity map[string]*nftAffinitySet) {
	if svc.SessionAffinity == corev1.ServiceAffinityClientIP {
		for _, ep := range eps {
			epBase := nftEndpointBase(svc.Name, ep)
			set := affinity[nftAffinityPrefix+epBase]
			target := nftEndpointPrefix + epBase
			s.add(chain, nftRule{kind: nftRuleAffinityCheck, set: set, targetName: target,
				text: "ip saddr @" + set.name + " goto " + target})
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "numgen random mod %d vmap { ", len(eps))
	names := make([]string, len(eps))
	for i, ep := range eps {
		names[i] = nftEndpointPrefix + nftEndpointBase(svc.Name, ep)
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d : goto %s", i, names[i])
	}
	b.WriteString(" }")
	s.add(chain, nftRule{kind: nftRuleNumgen, targetNames: names, text: b.String()})
}
