package proxier

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Snapshot is the proxy's view of the cluster at one moment: upstream's
// ServicePortMap and EndpointsMap, built from full lists rather than from
// change trackers.
type Snapshot struct {
	// NodeName is the node this proxy runs on; endpoints on it are local.
	NodeName string
	// Services holds one entry per proxied service port.
	Services map[ServicePortName]*ServiceInfo
	// Endpoints holds every endpoint of each service port, ready or not,
	// sorted by "ip:port" as upstream sorts them. A mode decides which of
	// them receive traffic.
	Endpoints map[ServicePortName][]Endpoint
	// Skipped lists the objects, or parts of them, left out because they
	// were malformed or of a kind klab does not proxy (IPv6). The snapshot
	// is usable without them, as upstream skips such objects and goes on.
	Skipped []error
}

// ServiceNames returns the service ports in the order modes write rules.
func (s *Snapshot) ServiceNames() []ServicePortName {
	names := make([]ServicePortName, 0, len(s.Services))
	for name := range s.Services {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b ServicePortName) int {
		if a.less(b) {
			return -1
		}
		if b.less(a) {
			return 1
		}
		return 0
	})
	return names
}

// BuildSnapshot builds the proxy's view from the Services and EndpointSlices
// it watches. Headless and ExternalName Services are not proxied; non-IPv4
// slices are ignored. Anything malformed is skipped and listed in
// Snapshot.Skipped with what was wrong and where.
func BuildSnapshot(nodeName string, services []*corev1.Service, endpointSlices []*discoveryv1.EndpointSlice) *Snapshot {
	snap := &Snapshot{
		NodeName:  nodeName,
		Services:  make(map[ServicePortName]*ServiceInfo),
		Endpoints: make(map[ServicePortName][]Endpoint),
	}
	for i, svc := range services {
		if svc == nil {
			snap.Skipped = append(snap.Skipped, fmt.Errorf("services[%d]: nil Service", i))
			continue
		}
		snap.addService(svc)
	}
	snap.addEndpointSlices(endpointSlices)
	return snap
}

// addService adds one entry per port of a proxied Service.
func (s *Snapshot) addService(svc *corev1.Service) {
	key := svc.Namespace + "/" + svc.Name
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return // headless: DNS only, nothing to proxy
	}
	clusterIP, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil || !clusterIP.Is4() {
		s.Skipped = append(s.Skipped, fmt.Errorf("service %s: spec.clusterIP %q is not an IPv4 address (klab proxies IPv4 only)", key, svc.Spec.ClusterIP))
		return
	}
	sticky := 0
	if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		sticky = defaultStickyMaxAgeSeconds
		if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			sticky = int(*c.ClientIP.TimeoutSeconds)
		}
	}
	externalLocal := (svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer) &&
		svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	internalLocal := svc.Spec.InternalTrafficPolicy != nil &&
		*svc.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal
	affinity := svc.Spec.SessionAffinity
	if affinity != corev1.ServiceAffinityClientIP {
		affinity = corev1.ServiceAffinityNone
	}
	for i, port := range svc.Spec.Ports {
		protocol := port.Protocol
		if protocol == "" {
			protocol = corev1.ProtocolTCP
		}
		where := fmt.Sprintf("service %s: spec.ports[%d]", key, i)
		switch protocol {
		case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			s.Skipped = append(s.Skipped, fmt.Errorf("%s: unknown protocol %q", where, protocol))
			continue
		}
		if port.Port < 1 || port.Port > 65535 {
			s.Skipped = append(s.Skipped, fmt.Errorf("%s: port %d is outside 1..65535", where, port.Port))
			continue
		}
		if port.NodePort < 0 || port.NodePort > 65535 {
			s.Skipped = append(s.Skipped, fmt.Errorf("%s: nodePort %d is outside 0..65535", where, port.NodePort))
			continue
		}
		name := ServicePortName{
			NamespacedName: types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name},
			Port:           port.Name,
			Protocol:       protocol,
		}
		if _, dup := s.Services[name]; dup {
			s.Skipped = append(s.Skipped, fmt.Errorf("%s: %s is declared twice", where, name))
			continue
		}
		s.Services[name] = &ServiceInfo{
			Name:                name,
			ClusterIP:           clusterIP,
			Port:                int(port.Port),
			NodePort:            int(port.NodePort),
			SessionAffinity:     affinity,
			StickyMaxAgeSeconds: sticky,
			InternalPolicyLocal: internalLocal,
			ExternalPolicyLocal: externalLocal,
		}
	}
}

// addEndpointSlices merges the slices of every service into one sorted list
// per service port, dropping duplicates as upstream's endpoint slice cache
// does (the first copy wins unless a later one says it is local).
func (s *Snapshot) addEndpointSlices(endpointSlices []*discoveryv1.EndpointSlice) {
	ordered := make([]*discoveryv1.EndpointSlice, 0, len(endpointSlices))
	for i, slice := range endpointSlices {
		if slice == nil {
			s.Skipped = append(s.Skipped, fmt.Errorf("endpointSlices[%d]: nil EndpointSlice", i))
			continue
		}
		ordered = append(ordered, slice)
	}
	slices.SortFunc(ordered, func(a, b *discoveryv1.EndpointSlice) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})

	seen := make(map[ServicePortName]map[netip.AddrPort]int) // index into s.Endpoints
	for _, slice := range ordered {
		key := slice.Namespace + "/" + slice.Name
		if slice.AddressType != discoveryv1.AddressTypeIPv4 {
			continue // IPv6 and FQDN slices are not for an IPv4 proxy
		}
		serviceName := slice.Labels[discoveryv1.LabelServiceName]
		if serviceName == "" {
			s.Skipped = append(s.Skipped, fmt.Errorf("endpointslice %s: no %s label, so no service to attach it to", key, discoveryv1.LabelServiceName))
			continue
		}
		for pi, port := range slice.Ports {
			if port.Port == nil {
				continue // no port: the service's target port matched no container port
			}
			if *port.Port < 1 || *port.Port > 65535 {
				s.Skipped = append(s.Skipped, fmt.Errorf("endpointslice %s: ports[%d]: port %d is outside 1..65535", key, pi, *port.Port))
				continue
			}
			name := ServicePortName{NamespacedName: types.NamespacedName{Namespace: slice.Namespace, Name: serviceName}, Protocol: corev1.ProtocolTCP}
			if port.Name != nil {
				name.Port = *port.Name
			}
			if port.Protocol != nil {
				name.Protocol = *port.Protocol
			}
			if seen[name] == nil {
				seen[name] = make(map[netip.AddrPort]int)
			}
			for ei, ep := range slice.Endpoints {
				if len(ep.Addresses) == 0 {
					continue
				}
				ip, err := netip.ParseAddr(ep.Addresses[0])
				if err != nil || !ip.Is4() {
					s.Skipped = append(s.Skipped, fmt.Errorf("endpointslice %s: endpoints[%d]: address %q is not an IPv4 address", key, ei, ep.Addresses[0]))
					continue
				}
				e := endpointFromSlice(ep, ip, int(*port.Port), s.NodeName)
				at, dup := seen[name][e.addrPort()]
				switch {
				case !dup:
					seen[name][e.addrPort()] = len(s.Endpoints[name])
					s.Endpoints[name] = append(s.Endpoints[name], e)
				case e.IsLocal:
					s.Endpoints[name][at] = e
				}
			}
		}
	}
	for name, eps := range s.Endpoints {
		slices.SortFunc(eps, func(a, b Endpoint) int { return cmp.Compare(a.String(), b.String()) })
		s.Endpoints[name] = eps
	}
}

// endpointFromSlice applies the EndpointConditions defaults.
func endpointFromSlice(ep discoveryv1.Endpoint, ip netip.Addr, port int, nodeName string) Endpoint {
	e := Endpoint{
		IP:          ip,
		Port:        port,
		Ready:       ep.Conditions.Ready == nil || *ep.Conditions.Ready,
		Serving:     ep.Conditions.Serving == nil || *ep.Conditions.Serving,
		Terminating: ep.Conditions.Terminating != nil && *ep.Conditions.Terminating,
	}
	if ep.NodeName != nil {
		e.NodeName = *ep.NodeName
		e.IsLocal = nodeName != "" && e.NodeName == nodeName
	}
	if ep.TargetRef != nil && ep.TargetRef.Kind == "Pod" {
		e.Pod = ep.TargetRef.Name
	}
	return e
}
