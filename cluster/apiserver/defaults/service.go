package defaults

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// defaultService sets a Service's defaults (SetDefaults_Service), keeps
// clusterIP and clusterIPs in step (the service strategy) and chooses its IP
// families the way the Service allocator does before it allocates, for klab's
// single-stack IPv4 cluster.
func defaultService(svc *corev1.Service) {
	spec := &svc.Spec
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityNone:
		spec.SessionAffinityConfig = nil
	case corev1.ServiceAffinityClientIP:
		cfg := spec.SessionAffinityConfig
		if cfg == nil || cfg.ClientIP == nil || cfg.ClientIP.TimeoutSeconds == nil {
			spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{
				ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To(corev1.DefaultClientIPServiceAffinitySeconds)},
			}
		}
	}
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	for i := range spec.Ports {
		port := &spec.Ports[i]
		if port.Protocol == "" {
			port.Protocol = corev1.ProtocolTCP
		}
		// An unset targetPort means "the same number as port".
		if port.TargetPort == intstr.FromInt32(0) || port.TargetPort == intstr.FromString("") {
			port.TargetPort = intstr.FromInt32(port.Port)
		}
	}
	if externallyAccessible(svc) && spec.ExternalTrafficPolicy == "" {
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if spec.InternalTrafficPolicy == nil {
		switch spec.Type {
		case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
			spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
		}
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer {
		if spec.AllocateLoadBalancerNodePorts == nil {
			spec.AllocateLoadBalancerNodePorts = ptr.To(true)
		}
		for i := range svc.Status.LoadBalancer.Ingress {
			ing := &svc.Status.LoadBalancer.Ingress[i]
			if ing.IP != "" && ing.IPMode == nil {
				ing.IPMode = ptr.To(corev1.LoadBalancerIPModeVIP)
			}
		}
	}

	// A user may set either clusterIP or clusterIPs; the other follows.
	if spec.ClusterIP != "" && len(spec.ClusterIPs) == 0 {
		spec.ClusterIPs = []string{spec.ClusterIP}
	}
	if spec.ClusterIP == "" && len(spec.ClusterIPs) > 0 {
		spec.ClusterIP = spec.ClusterIPs[0]
	}
	defaultIPFamilies(svc)
}

// defaultIPFamilies fills ipFamilyPolicy and ipFamilies. A Service that is
// headless and has no selector defaults to RequireDualStack with both
// families, even on a single-stack cluster, because its endpoints are
// managed by hand and may be of either family; every other Service is
// SingleStack, with the family of its clusterIP, or IPv4.
func defaultIPFamilies(svc *corev1.Service) {
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		return
	}
	headlessNoSelector := spec.ClusterIP == corev1.ClusterIPNone && len(spec.Selector) == 0
	if spec.IPFamilyPolicy == nil {
		if headlessNoSelector {
			spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
		} else {
			spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
		}
	}
	for i, ip := range spec.ClusterIPs {
		if ip == corev1.ClusterIPNone {
			break
		}
		addr, err := netip.ParseAddr(ip)
		if err != nil || i < len(spec.IPFamilies) {
			continue // a bad IP is for validation to report
		}
		family := corev1.IPv4Protocol
		if addr.Is6() && !addr.Is4In6() {
			family = corev1.IPv6Protocol
		}
		spec.IPFamilies = append(spec.IPFamilies, family)
	}
	if len(spec.IPFamilies) == 0 {
		spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	}
	if headlessNoSelector && len(spec.IPFamilies) == 1 && *spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
		if spec.IPFamilies[0] == corev1.IPv4Protocol {
			spec.IPFamilies = append(spec.IPFamilies, corev1.IPv6Protocol)
		} else {
			spec.IPFamilies = append(spec.IPFamilies, corev1.IPv4Protocol)
		}
	}
}

// externallyAccessible reports whether a Service can be reached from outside
// the cluster: NodePort and LoadBalancer Services, and ClusterIP Services
// with externalIPs.
func externallyAccessible(svc *corev1.Service) bool {
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
		return true
	case corev1.ServiceTypeClusterIP:
		return len(svc.Spec.ExternalIPs) > 0
	}
	return false
}

func defaultEndpoints(ep *corev1.Endpoints) {
	for i := range ep.Subsets {
		for j := range ep.Subsets[i].Ports {
			if ep.Subsets[i].Ports[j].Protocol == "" {
				ep.Subsets[i].Ports[j].Protocol = corev1.ProtocolTCP
			}
		}
	}
}

func defaultEndpointSlice(slice *discoveryv1.EndpointSlice) {
	for i := range slice.Ports {
		port := &slice.Ports[i]
		if port.Name == nil {
			port.Name = ptr.To("")
		}
		if port.Protocol == nil {
			port.Protocol = ptr.To(corev1.ProtocolTCP)
		}
	}
}
