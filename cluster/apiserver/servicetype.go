package apiserver

import (
	"context"
	"net"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// A Service's type decides which allocations it holds: every type but
// ExternalName a ClusterIP, NodePort and LoadBalancer a NodePort per port,
// a LoadBalancer with externalTrafficPolicy Local a healthCheckNodePort.
// When an update changes the type, upstream's service strategy
// (dropTypeDependentFields) wipes what the new type no longer needs, but
// only fields the client left as they were: a value the client changed
// at the same time is the client's to explain to validation. The service
// REST then gives the freed values back to their allocators.

func needsClusterIP(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName
}

func needsNodePort(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer
}

func needsHealthCheckNodePort(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

// externallyAccessible is upstream's ExternallyAccessible: reached from
// outside the cluster, where externalTrafficPolicy applies.
func externallyAccessible(svc *corev1.Service) bool {
	return needsNodePort(svc) || (svc.Spec.Type == corev1.ServiceTypeClusterIP && len(svc.Spec.ExternalIPs) > 0)
}

// dropTypeDependentFields clears, on update, what svc's new type no longer
// uses and the client did not change.
func dropTypeDependentFields(svc, old *corev1.Service) {
	if needsClusterIP(old) && !needsClusterIP(svc) {
		if svc.Spec.ClusterIP == old.Spec.ClusterIP && slices.Equal(svc.Spec.ClusterIPs, old.Spec.ClusterIPs) {
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "", nil
		}
		if slices.Equal(svc.Spec.IPFamilies, old.Spec.IPFamilies) {
			svc.Spec.IPFamilies = nil
		}
		if svc.Spec.IPFamilyPolicy != nil && old.Spec.IPFamilyPolicy != nil && *svc.Spec.IPFamilyPolicy == *old.Spec.IPFamilyPolicy {
			svc.Spec.IPFamilyPolicy = nil
		}
	}
	// The client may add, remove or move ports, as long as it names no
	// NodePort the Service did not hold.
	if needsNodePort(old) && !needsNodePort(svc) && nodePortsOf(old).isSupersetOf(nodePortsOf(svc)) {
		for i := range svc.Spec.Ports {
			svc.Spec.Ports[i].NodePort = 0
		}
	}
	if needsHealthCheckNodePort(old) && !needsHealthCheckNodePort(svc) && svc.Spec.HealthCheckNodePort == old.Spec.HealthCheckNodePort {
		svc.Spec.HealthCheckNodePort = 0
	}
	if old.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		if a, b := svc.Spec.AllocateLoadBalancerNodePorts, old.Spec.AllocateLoadBalancerNodePorts; a != nil && b != nil && *a == *b {
			svc.Spec.AllocateLoadBalancerNodePorts = nil
		}
		if a, b := svc.Spec.LoadBalancerClass, old.Spec.LoadBalancerClass; a != nil && b != nil && *a == *b {
			svc.Spec.LoadBalancerClass = nil
		}
	}
	if externallyAccessible(old) && !externallyAccessible(svc) && svc.Spec.ExternalTrafficPolicy == old.Spec.ExternalTrafficPolicy {
		svc.Spec.ExternalTrafficPolicy = ""
	}
	// A load balancer's status goes with its type; de-provisioning is the
	// cloud's business, not the client's.
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		svc.Status.LoadBalancer = corev1.LoadBalancerStatus{}
	}
}

// releaseDropped gives back the ClusterIP and NodePorts old held that the
// stored svc no longer does, once the update that dropped them is written.
func (s *Server) releaseDropped(ctx context.Context, obj, current runtime.Object) {
	svc, ok := obj.(*corev1.Service)
	if !ok || current == nil {
		return
	}
	old := current.(*corev1.Service)
	if old.Spec.ClusterIP != svc.Spec.ClusterIP {
		if ip := net.ParseIP(old.Spec.ClusterIP); ip != nil {
			s.ips.Release(ctx, ip)
		}
	}
	kept := nodePortsOf(svc)
	for p := range nodePortsOf(old) {
		if !kept[p] {
			s.ports.Release(ctx, int(p))
		}
	}
}

type portSet map[int32]bool

func nodePortsOf(svc *corev1.Service) portSet {
	out := portSet{}
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 {
			out[p.NodePort] = true
		}
	}
	return out
}

func (s portSet) isSupersetOf(other portSet) bool {
	for p := range other {
		if !s[p] {
			return false
		}
	}
	return true
}
