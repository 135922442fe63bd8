package endpoints

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"

	corev1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/controller/endpointslice/endpointsliceutil"
)

const (
	// maxCapacity is the most addresses one Endpoints holds; beyond it the
	// controller truncates and says so in the over-capacity annotation.
	// EndpointSlices have no such limit.
	maxCapacity = 1000
	// truncated is the endpoints.kubernetes.io/over-capacity value on a
	// truncated Endpoints.
	truncated = "truncated"
)

// buildSubsets lists the Service's pods as endpoint subsets: every pod that
// should be in endpoints, with an IP of the Service's family, once per
// Service port its targetPort resolves on. Ready pods (or all, when the
// Service publishes not-ready addresses) are addresses, the others
// notReadyAddresses. It returns the repacked subsets and the number of
// ready and not-ready address entries.
func buildSubsets(service *corev1.Service, pods []*corev1.Pod) ([]corev1.EndpointSubset, int, int) {
	var subsets []corev1.EndpointSubset
	ready, notReady := 0, 0
	publishNotReady := service.Spec.PublishNotReadyAddresses
	add := func(pod *corev1.Pod, addr corev1.EndpointAddress, port *corev1.EndpointPort) {
		s := corev1.EndpointSubset{}
		if port != nil {
			s.Ports = []corev1.EndpointPort{*port}
		}
		if publishNotReady || controllerutil.IsPodReady(pod) {
			s.Addresses = []corev1.EndpointAddress{addr}
			ready++
		} else {
			s.NotReadyAddresses = []corev1.EndpointAddress{addr}
			notReady++
		}
		subsets = append(subsets, s)
	}
	for _, pod := range pods {
		// A terminating pod stays only when not-ready addresses are
		// published: it is not ready any more, but may still answer.
		if !endpointsliceutil.ShouldPodBeInEndpoints(pod, publishNotReady) {
			continue
		}
		addr, ok := podToEndpointAddress(service, pod)
		if !ok {
			continue
		}
		if endpointsliceutil.ShouldSetHostname(pod, service) {
			addr.Hostname = pod.Spec.Hostname
		}
		if len(service.Spec.Ports) == 0 {
			// Only a headless Service may have no ports: its endpoints are
			// addresses for DNS alone.
			if service.Spec.ClusterIP == corev1.ClusterIPNone {
				add(pod, addr, nil)
			}
			continue
		}
		for i := range service.Spec.Ports {
			sp := &service.Spec.Ports[i]
			portNum, err := endpointsliceutil.FindPort(pod, sp)
			if err != nil {
				continue // this pod does not serve this port
			}
			add(pod, addr, &corev1.EndpointPort{Name: sp.Name, Port: int32(portNum), Protocol: sp.Protocol, AppProtocol: sp.AppProtocol})
		}
	}
	return repackSubsets(subsets), ready, notReady
}

// podToEndpointAddress returns the pod's address in the Service's IP family
// (the first of its families; from the cluster IP, or for a headless
// Service the pod IP, when the families are not set).
func podToEndpointAddress(service *corev1.Service, pod *corev1.Pod) (corev1.EndpointAddress, bool) {
	wantV6 := false
	switch {
	case len(service.Spec.IPFamilies) > 0:
		wantV6 = service.Spec.IPFamilies[0] == corev1.IPv6Protocol
	case service.Spec.ClusterIP != "" && service.Spec.ClusterIP != corev1.ClusterIPNone:
		wantV6 = isIPv6(service.Spec.ClusterIP)
	default:
		wantV6 = isIPv6(pod.Status.PodIP)
	}
	ips := pod.Status.PodIPs
	if len(ips) == 0 && pod.Status.PodIP != "" {
		ips = []corev1.PodIP{{IP: pod.Status.PodIP}}
	}
	for _, ip := range ips {
		if isIPv6(ip.IP) == wantV6 {
			nodeName := pod.Spec.NodeName
			return corev1.EndpointAddress{
				IP:       ip.IP,
				NodeName: &nodeName,
				TargetRef: &corev1.ObjectReference{
					Kind:      "Pod",
					Namespace: pod.Namespace,
					Name:      pod.Name,
					UID:       pod.UID,
				},
			}, true
		}
	}
	return corev1.EndpointAddress{}, false
}

func isIPv6(s string) bool {
	addr, err := netip.ParseAddr(s)
	return err == nil && addr.Is6() && !addr.Is4In6()
}

// repackSubsets regroups subsets so that every address appears in exactly
// one subset, the one holding exactly the ports it serves: the canonical
// form upstream's RepackSubsets writes, sorted so that equal endpoints
// compare equal.
func repackSubsets(subsets []corev1.EndpointSubset) []corev1.EndpointSubset {
	type entry struct {
		addr  corev1.EndpointAddress
		ready bool
		ports map[string]corev1.EndpointPort
	}
	entries := map[string]*entry{}
	var order []string
	note := func(addr corev1.EndpointAddress, ready bool, port corev1.EndpointPort) {
		key := addressKey(addr) + "|" + strconv.FormatBool(ready)
		en, ok := entries[key]
		if !ok {
			en = &entry{addr: addr, ready: ready, ports: map[string]corev1.EndpointPort{}}
			entries[key] = en
			order = append(order, key)
		}
		en.ports[portKey(port)] = port
	}
	// noPorts stands for "serves no port" (a headless Service without
	// ports), so that such addresses group like any other.
	noPorts := corev1.EndpointPort{Port: -1}
	for _, s := range subsets {
		ports := s.Ports
		if len(ports) == 0 {
			ports = []corev1.EndpointPort{noPorts}
		}
		for _, p := range ports {
			for _, a := range s.Addresses {
				note(a, true, p)
			}
			for _, a := range s.NotReadyAddresses {
				note(a, false, p)
			}
		}
	}

	groups := map[string]*corev1.EndpointSubset{}
	var groupOrder []string
	for _, key := range order {
		en := entries[key]
		portKeys := slices.Sorted(maps.Keys(en.ports))
		groupKey := strings.Join(portKeys, ",")
		g, ok := groups[groupKey]
		if !ok {
			g = &corev1.EndpointSubset{}
			for _, pk := range portKeys {
				if p := en.ports[pk]; p.Port != noPorts.Port {
					g.Ports = append(g.Ports, p)
				}
			}
			groups[groupKey] = g
			groupOrder = append(groupOrder, groupKey)
		}
		if en.ready {
			g.Addresses = append(g.Addresses, en.addr)
		} else {
			g.NotReadyAddresses = append(g.NotReadyAddresses, en.addr)
		}
	}
	slices.Sort(groupOrder)
	out := make([]corev1.EndpointSubset, 0, len(groupOrder))
	for _, key := range groupOrder {
		g := groups[key]
		slices.SortFunc(g.Addresses, compareAddresses)
		slices.SortFunc(g.NotReadyAddresses, compareAddresses)
		out = append(out, *g)
	}
	return out
}

// addressKey identifies an address: its IP and the pod behind it.
func addressKey(a corev1.EndpointAddress) string {
	if a.TargetRef != nil {
		return a.IP + "/" + string(a.TargetRef.UID)
	}
	return a.IP
}

// portKey orders ports by name, then number, then protocol.
func portKey(p corev1.EndpointPort) string {
	app := ""
	if p.AppProtocol != nil {
		app = *p.AppProtocol
	}
	return fmt.Sprintf("%s/%08d/%s/%s", p.Name, p.Port, p.Protocol, app)
}

func compareAddresses(a, b corev1.EndpointAddress) int {
	if c := cmp.Compare(a.IP, b.IP); c != 0 {
		return c
	}
	return cmp.Compare(addressKey(a), addressKey(b))
}

// capacityAnnotationSetCorrectly reports whether the over-capacity
// annotation agrees with the subsets: absent while they fit. Subsets over
// capacity are never correct (they must be truncated).
func capacityAnnotationSetCorrectly(annotations map[string]string, subsets []corev1.EndpointSubset) bool {
	n := 0
	for _, s := range subsets {
		n += len(s.Addresses) + len(s.NotReadyAddresses)
	}
	if n > maxCapacity {
		return false
	}
	_, set := annotations[corev1.EndpointsOverCapacity]
	return !set
}

// truncateEndpoints cuts the Endpoints down to maxCapacity addresses and
// reports whether it had to. Ready addresses go last: not-ready ones are
// dropped first, and if the ready ones alone are too many, all not-ready
// ones go and the ready ones are cut. Each subset keeps a share in
// proportion to its size.
func truncateEndpoints(ep *corev1.Endpoints) bool {
	totalReady, totalNotReady := 0, 0
	for _, s := range ep.Subsets {
		totalReady += len(s.Addresses)
		totalNotReady += len(s.NotReadyAddresses)
	}
	if totalReady+totalNotReady <= maxCapacity {
		return false
	}
	cutReady := totalReady > maxCapacity
	budget, total := maxCapacity-totalReady, totalNotReady
	if cutReady {
		budget, total = maxCapacity, totalReady
	}
	left := budget
	for i := range ep.Subsets {
		s := &ep.Subsets[i]
		n := len(s.NotReadyAddresses)
		if cutReady {
			n = len(s.Addresses)
		}
		share := min(int(math.Ceil(float64(n)/float64(total)*float64(budget))), left)
		if cutReady {
			s.Addresses = s.Addresses[:min(share, len(s.Addresses))]
			s.NotReadyAddresses = []corev1.EndpointAddress{}
			left -= len(s.Addresses)
		} else {
			s.NotReadyAddresses = s.NotReadyAddresses[:min(share, len(s.NotReadyAddresses))]
			left -= len(s.NotReadyAddresses)
		}
	}
	return true
}
