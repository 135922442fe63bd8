package endpointslice

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/klab-dev/klab/cluster/controller/endpointslice/endpointsliceutil"
)

// podToEndpoint is the pod's endpoint in a slice of addressType. serving
// follows the pod's readiness; terminating its deletion; ready is serving
// and not terminating, or always true when the Service publishes not-ready
// addresses (ready is what kube-proxy routes to).
func podToEndpoint(pod *corev1.Pod, node *corev1.Node, service *corev1.Service, addressType discoveryv1.AddressType) discoveryv1.Endpoint {
	serving := controllerutil.IsPodReady(pod)
	terminating := pod.DeletionTimestamp != nil
	ready := service.Spec.PublishNotReadyAddresses || (serving && !terminating)
	ep := discoveryv1.Endpoint{
		Addresses: podAddresses(pod, addressType),
		Conditions: discoveryv1.EndpointConditions{
			Ready:       &ready,
			Serving:     &serving,
			Terminating: &terminating,
		},
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if pod.Spec.NodeName != "" {
		nodeName := pod.Spec.NodeName
		ep.NodeName = &nodeName
	}
	if node != nil && node.Labels[corev1.LabelTopologyZone] != "" {
		zone := node.Labels[corev1.LabelTopologyZone]
		ep.Zone = &zone
	}
	if endpointsliceutil.ShouldSetHostname(pod, service) {
		hostname := pod.Spec.Hostname
		ep.Hostname = &hostname
	}
	return ep
}

// podAddresses returns the pod's IPs of the slice's family, written in
// their canonical form.
func podAddresses(pod *corev1.Pod, addressType discoveryv1.AddressType) []string {
	ips := pod.Status.PodIPs
	if len(ips) == 0 && pod.Status.PodIP != "" {
		ips = []corev1.PodIP{{IP: pod.Status.PodIP}}
	}
	out := []string{}
	for _, ip := range ips {
		addr, err := netip.ParseAddr(ip.IP)
		if err != nil {
			continue
		}
		addr = addr.Unmap()
		if (addr.Is6() && addressType == discoveryv1.AddressTypeIPv6) || (addr.Is4() && addressType == discoveryv1.AddressTypeIPv4) {
			out = append(out, addr.String())
		}
	}
	return out
}

// endpointPorts are the Service's ports as the pod serves them; a port
// whose targetPort the pod does not resolve is left out, so pods serving
// different ports land in different slices.
func endpointPorts(service *corev1.Service, pod *corev1.Pod) []discoveryv1.EndpointPort {
	ports := []discoveryv1.EndpointPort{}
	for i := range service.Spec.Ports {
		sp := &service.Spec.Ports[i]
		num, err := endpointsliceutil.FindPort(pod, sp)
		if err != nil {
			continue
		}
		name, protocol, port := sp.Name, sp.Protocol, int32(num)
		ports = append(ports, discoveryv1.EndpointPort{Name: &name, Port: &port, Protocol: &protocol, AppProtocol: sp.AppProtocol})
	}
	return ports
}

// portMapKey identifies a set of ports, in any order; slices are grouped by
// it, since every endpoint of a slice serves the slice's ports.
func portMapKey(ports []discoveryv1.EndpointPort) string {
	keys := make([]string, 0, len(ports))
	for _, p := range ports {
		keys = append(keys, fmt.Sprintf("%s/%s/%s/%s", deref(p.Name), derefInt(p.Port), deref(p.Protocol), deref(p.AppProtocol)))
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}

func deref[T ~string](p *T) string {
	if p == nil {
		return "<nil>"
	}
	return string(*p)
}

func derefInt(p *int32) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprint(*p)
}

// endpointKey identifies an endpoint across syncs: its addresses, hostname
// and pod. The rest (conditions, node, zone) may change in place.
func endpointKey(ep *discoveryv1.Endpoint) string {
	addrs := slices.Sorted(slices.Values(ep.Addresses))
	key := strings.Join(addrs, ",") + "|" + deref(ep.Hostname)
	if ep.TargetRef != nil {
		key += "|" + ep.TargetRef.Namespace + "/" + ep.TargetRef.Name
	}
	return key
}

// endpointsEqualBeyondKey compares what endpointKey leaves out, ignoring
// the pod's resourceVersion.
func endpointsEqualBeyondKey(a, b *discoveryv1.Endpoint) bool {
	if deref(a.NodeName) != deref(b.NodeName) || deref(a.Zone) != deref(b.Zone) {
		return false
	}
	if !boolPtrEqual(a.Conditions.Ready, b.Conditions.Ready) || !boolPtrEqual(a.Conditions.Serving, b.Conditions.Serving) ||
		!boolPtrEqual(a.Conditions.Terminating, b.Conditions.Terminating) {
		return false
	}
	if (a.TargetRef == nil) != (b.TargetRef == nil) {
		return false
	}
	if a.TargetRef != nil {
		ra, rb := *a.TargetRef, *b.TargetRef
		ra.ResourceVersion, rb.ResourceVersion = "", ""
		return ra == rb
	}
	return true
}

func boolPtrEqual(a, b *bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// newEndpointSlice is an empty slice for service with the given ports: a
// name generated from the Service's, the Service's labels, and the Service
// as its controlling owner, so that deleting the Service lets the garbage
// collector delete its slices.
func newEndpointSlice(service *corev1.Service, ports []discoveryv1.EndpointPort, addressType discoveryv1.AddressType) *discoveryv1.EndpointSlice {
	owner := metav1.NewControllerRef(service, corev1.SchemeGroupVersion.WithKind("Service"))
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    endpointSlicePrefix(service.Name),
			Namespace:       service.Namespace,
			OwnerReferences: []metav1.OwnerReference{*owner},
		},
		Ports:       ports,
		AddressType: addressType,
		Endpoints:   []discoveryv1.Endpoint{},
	}
	slice.Labels, _ = sliceLabels(slice, service)
	return slice
}

// endpointSlicePrefix is "<service>-", or the bare Service name when the
// dash would make an invalid name.
func endpointSlicePrefix(serviceName string) string {
	prefix := serviceName + "-"
	if len(apimachineryvalidation.NameIsDNSSubdomain(prefix, true)) != 0 {
		return serviceName
	}
	return prefix
}

// ownedBy reports whether the slice belongs to this Service object (not to
// a deleted Service of the same name whose slices await collection).
func ownedBy(slice *discoveryv1.EndpointSlice, service *corev1.Service) bool {
	for _, o := range slice.OwnerReferences {
		if o.UID == service.UID && o.Kind == "Service" && o.APIVersion == "v1" {
			return true
		}
	}
	return false
}

// sliceLabels returns the labels slice should carry, and whether its own
// (non-reserved) labels differ from the Service's: the Service's labels,
// the headless marker, the Service name and the managed-by label. The
// reserved labels are the controller's, whatever the Service says.
func sliceLabels(slice *discoveryv1.EndpointSlice, service *corev1.Service) (map[string]string, bool) {
	reserved := sets.New(discoveryv1.LabelServiceName, discoveryv1.LabelManagedBy, corev1.IsHeadlessService)
	have, want := map[string]string{}, map[string]string{}
	for k, v := range slice.Labels {
		if !reserved.Has(k) {
			have[k] = v
		}
	}
	for k, v := range service.Labels {
		if !reserved.Has(k) {
			want[k] = v
		}
	}
	changed := !maps.Equal(have, want)
	if service.Spec.ClusterIP == corev1.ClusterIPNone || service.Spec.ClusterIP == "" {
		want[corev1.IsHeadlessService] = ""
	}
	want[discoveryv1.LabelServiceName] = service.Name
	want[discoveryv1.LabelManagedBy] = controllerQualifiedName
	return want, changed
}

// addressTypesForService are the slice address types the Service's IP
// families ask for; without families, the cluster IP's family, or both for
// a headless Service.
func addressTypesForService(service *corev1.Service) sets.Set[discoveryv1.AddressType] {
	types := sets.New[discoveryv1.AddressType]()
	for _, family := range service.Spec.IPFamilies {
		switch family {
		case corev1.IPv4Protocol:
			types.Insert(discoveryv1.AddressTypeIPv4)
		case corev1.IPv6Protocol:
			types.Insert(discoveryv1.AddressTypeIPv6)
		}
	}
	if types.Len() > 0 {
		return types
	}
	if ip := service.Spec.ClusterIP; ip != "" && ip != corev1.ClusterIPNone {
		if addr, err := netip.ParseAddr(ip); err == nil && addr.Unmap().Is6() {
			return types.Insert(discoveryv1.AddressTypeIPv6)
		}
		return types.Insert(discoveryv1.AddressTypeIPv4)
	}
	return types.Insert(discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6)
}
