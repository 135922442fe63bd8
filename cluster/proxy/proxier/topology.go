package proxier

import (
	"cmp"
	"slices"
)

// endpointSets is the result of categorizing a service port's endpoints, as
// upstream's proxy.CategorizeEndpoints does (without topology hints, which
// klab's nodes do not carry).
type endpointSets struct {
	// cluster are the endpoints for the Cluster policy: the ready ones, or,
	// if none is ready anywhere, the serving-and-terminating ones so that a
	// rollout does not drop connections.
	cluster []Endpoint
	// local are the endpoints for the Local policy: ready ones on this node,
	// or, if there are none, serving-and-terminating ones on this node.
	local []Endpoint
	// reachable is every endpoint some traffic policy of the port can reach
	// from this node: the union of the two above, sorted.
	reachable []Endpoint
	// hasAny is true if the port has a usable endpoint anywhere.
	hasAny bool
}

// categorize splits a service port's endpoints by traffic policy.
func categorize(svc *ServiceInfo, eps []Endpoint) endpointSets {
	var s endpointSets
	if svc.UsesClusterEndpoints() {
		s.cluster = filterEndpoints(eps, func(e Endpoint) bool { return e.Ready })
		if len(s.cluster) == 0 {
			s.cluster = filterEndpoints(eps, func(e Endpoint) bool { return e.Serving && e.Terminating })
		}
		s.hasAny = len(s.cluster) > 0
	}
	if !svc.UsesLocalEndpoints() {
		s.reachable = s.cluster
		return s
	}

	var localReady, localServingTerminating bool
	for _, e := range eps {
		switch {
		case e.Ready:
			s.hasAny = true
			localReady = localReady || e.IsLocal
		case e.Serving && e.Terminating:
			s.hasAny = true
			localServingTerminating = localServingTerminating || e.IsLocal
		}
	}
	switch {
	case localReady:
		s.local = filterEndpoints(eps, func(e Endpoint) bool { return e.IsLocal && e.Ready })
	case localServingTerminating:
		s.local = filterEndpoints(eps, func(e Endpoint) bool { return e.IsLocal && e.Serving && e.Terminating })
	}
	if !svc.UsesClusterEndpoints() {
		s.reachable = s.local
		return s
	}

	s.reachable = slices.Clone(s.cluster)
	for _, e := range s.local {
		if !slices.ContainsFunc(s.reachable, func(r Endpoint) bool { return r.addrPort() == e.addrPort() }) {
			s.reachable = append(s.reachable, e)
		}
	}
	slices.SortFunc(s.reachable, func(a, b Endpoint) int { return cmp.Compare(a.String(), b.String()) })
	return s
}

// internal returns the endpoints ClusterIP traffic may reach, and the error a
// connection gets when there are none.
func (s endpointSets) internal(svc *ServiceInfo) ([]Endpoint, error) {
	return s.forPolicy(svc.InternalPolicyLocal)
}

// external returns the endpoints NodePort traffic from outside the node may
// reach, and the error a connection gets when there are none.
func (s endpointSets) external(svc *ServiceInfo) ([]Endpoint, error) {
	return s.forPolicy(svc.ExternalPolicyLocal)
}

func (s endpointSets) forPolicy(local bool) ([]Endpoint, error) {
	switch {
	case !s.hasAny:
		return nil, ErrNoEndpoints
	case local && len(s.local) == 0:
		return nil, ErrNoLocalEndpoints
	case local:
		return s.local, nil
	}
	return s.cluster, nil
}

// trafficPlan is what upstream's iptables and nftables proxiers decide for
// one service port before writing its rules.
type trafficPlan struct {
	// usesClusterChain and usesLocalChain say whether the Cluster-policy
	// chain (KUBE-SVC-, service-) and the Local-policy chain (KUBE-SVL-,
	// local-) exist; usesExternalChain whether the chain NodePort traffic
	// enters (KUBE-EXT-, external-) exists.
	usesClusterChain, usesLocalChain, usesExternalChain bool
	// hasInternal and hasExternal say whether ClusterIP traffic and NodePort
	// traffic from outside have an endpoint to go to; when not, it is
	// rejected (no endpoints at all) or dropped (none on this node).
	hasInternal, hasExternal bool
}

func planTraffic(svc *ServiceInfo, sets endpointSets) trafficPlan {
	return trafficPlan{
		usesClusterChain:  len(sets.cluster) > 0 && svc.UsesClusterEndpoints(),
		usesLocalChain:    len(sets.local) > 0 && svc.UsesLocalEndpoints(),
		usesExternalChain: sets.hasAny && svc.ExternallyAccessible(),
		hasInternal:       sets.hasAny && (!svc.InternalPolicyLocal || len(sets.local) > 0),
		hasExternal:       sets.hasAny && (!svc.ExternalPolicyLocal || len(sets.local) > 0),
	}
}

func filterEndpoints(eps []Endpoint, keep func(Endpoint) bool) []Endpoint {
	var out []Endpoint
	for _, e := range eps {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}
