package proxier

import (
	corev1 "k8s.io/api/core/v1"
)

// writeServiceRules writes one service port's rules, following upstream's
// syncProxyRules: dispatch in KUBE-SERVICES and KUBE-NODEPORTS, REJECT or
// DROP in the filter table when there is nowhere to send the traffic, then
// the service's chains.
func (m *IPTables) writeServiceRules(filter, nat *ipTable, svc *ServiceInfo, sets endpointSets, large bool) {
	name := svc.Name.String()
	proto := svc.Name.protocol()
	hash := portProtoHash(name, proto)
	clusterChain := clusterPolicyChainPrefix + hash
	localChain := localPolicyChainPrefix + hash
	externalChain := externalChainPrefix + hash

	plan := planTraffic(svc, sets)
	internalChain, externalPolicyChain := clusterChain, clusterChain
	if svc.InternalPolicyLocal {
		internalChain = localChain
	}
	if svc.ExternalPolicyLocal {
		externalPolicyChain = localChain
	}

	// Traffic with nowhere to go is rejected by the filter table when the
	// service has no endpoints at all, dropped when it has none here.
	noEndpoints, noEndpointsComment := "REJECT", name+" has no endpoints"
	if sets.hasAny {
		noEndpoints, noEndpointsComment = "DROP", name+" has no local endpoints"
	}

	// Declare the service's chains, in the order a reader follows them.
	if plan.usesClusterChain {
		nat.chain(clusterChain, false)
	}
	if plan.usesLocalChain {
		nat.chain(localChain, false)
	}
	if plan.usesExternalChain {
		nat.chain(externalChain, false)
	}
	for _, ep := range sets.reachable {
		nat.chain(endpointChainName(name, proto, ep.String()), false)
	}

	if plan.hasInternal {
		nat.appendRule(kubeServicesChain, newRule().comment(name+" cluster IP").mProto(proto).
			destination(svc.ClusterIP).destPort(svc.Port).jumpChain(internalChain))
	} else {
		filter.appendRule(kubeServicesChain, newRule().comment(noEndpointsComment).mProto(proto).
			destination(svc.ClusterIP).destPort(svc.Port).verdict(filterTarget(noEndpoints), noEndpoints))
	}
	if svc.NodePort != 0 {
		if sets.hasAny {
			nat.appendRule(kubeNodePortsChain, newRule().comment(name).mProto(proto).
				destPort(svc.NodePort).jumpChain(externalChain))
		}
		if !plan.hasExternal {
			filter.appendRule(kubeExternalServicesChain, newRule().comment(noEndpointsComment).addrTypeDstLocal().
				mProto(proto).destPort(svc.NodePort).verdict(filterTarget(noEndpoints), noEndpoints))
		}
	}

	if plan.hasInternal && m.cfg.ClusterCIDR.IsValid() {
		// Masquerade traffic to the ClusterIP that does not come from a pod:
		// it may have been routed here from off the cluster.
		nat.appendRule(internalChain, newRule().comment(name+" cluster IP").mProto(proto).
			destination(svc.ClusterIP).destPort(svc.Port).sourceNet(m.cfg.ClusterCIDR, true).
			jumpChain(kubeMarkMasqChain))
	}
	if plan.usesExternalChain {
		m.writeExternalChain(nat, svc, externalChain, clusterChain, externalPolicyChain, plan.hasExternal)
	}
	if plan.usesClusterChain {
		m.writeServiceToEndpointRules(nat, svc, clusterChain, sets.cluster, large)
	}
	if plan.usesLocalChain {
		m.writeServiceToEndpointRules(nat, svc, localChain, sets.local, large)
	}
	for _, ep := range sets.reachable {
		chain := endpointChainName(name, proto, ep.String())
		masq := newRule()
		if !large {
			masq.comment(name)
		}
		nat.appendRule(chain, masq.source(ep.IP).jumpChain(kubeMarkMasqChain))
		dnat := newRule()
		if !large {
			dnat.comment(name)
		}
		if svc.SessionAffinity == corev1.ServiceAffinityClientIP {
			dnat.recentSet(chain)
		}
		nat.appendRule(chain, dnat.mProto(proto).dnatTo(ep))
	}
}

// writeExternalChain writes KUBE-EXT-<hash>, where NodePort traffic goes
// first: masquerade it when it may leave the node, and with
// externalTrafficPolicy Local send traffic from pods and from the node itself
// to all endpoints ("short-circuit") and everything else to local ones.
func (m *IPTables) writeExternalChain(nat *ipTable, svc *ServiceInfo, chain, clusterChain, policyChain string, hasExternal bool) {
	name := svc.Name.String()
	if !svc.ExternalPolicyLocal {
		nat.appendRule(chain, newRule().comment("masquerade traffic for "+name+" external destinations").
			jumpChain(kubeMarkMasqChain))
	} else {
		if m.cfg.ClusterCIDR.IsValid() {
			nat.appendRule(chain, newRule().comment("pod traffic for "+name+" external destinations").
				sourceNet(m.cfg.ClusterCIDR, false).jumpChain(clusterChain))
		}
		nat.appendRule(chain, newRule().comment("masquerade LOCAL traffic for "+name+" external destinations").
			addrTypeSrcLocal().jumpChain(kubeMarkMasqChain))
		nat.appendRule(chain, newRule().comment("route LOCAL traffic for "+name+" external destinations").
			addrTypeSrcLocal().jumpChain(clusterChain))
	}
	if hasExternal {
		nat.appendRule(chain, newRule().jumpChain(policyChain))
	}
}

// writeServiceToEndpointRules writes a KUBE-SVC or KUBE-SVL chain: first the
// session affinity checks, then one rule per endpoint matching with
// probability 1/n, 1/(n-1), ..., the last one unconditionally, so that each
// endpoint is chosen with probability 1/n overall.
func (m *IPTables) writeServiceToEndpointRules(nat *ipTable, svc *ServiceInfo, chain string, eps []Endpoint, large bool) {
	name := svc.Name.String()
	proto := svc.Name.protocol()
	if svc.SessionAffinity == corev1.ServiceAffinityClientIP {
		for _, ep := range eps {
			sep := endpointChainName(name, proto, ep.String())
			r := newRule()
			if !large {
				r.comment(name + " -> " + ep.String())
			}
			nat.appendRule(chain, r.recentCheck(sep, svc.StickyMaxAgeSeconds).jumpChain(sep))
		}
	}
	for i, ep := range eps {
		sep := endpointChainName(name, proto, ep.String())
		r := newRule()
		if !large {
			r.comment(name + " -> " + ep.String())
		}
		if i < len(eps)-1 {
			r.probability(probability(len(eps) - i))
		}
		nat.appendRule(chain, r.jumpChain(sep))
	}
}

func filterTarget(name string) targetKind {
	if name == "DROP" {
		return targetDrop
	}
	return targetReject
}
