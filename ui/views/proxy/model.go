package proxy

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Labels kube-proxy honours on a Service (cmd/kube-proxy/app/server.go):
// one that another proxy claims, and a headless one's slices.
const labelServiceProxyName = "service.kubernetes.io/service-proxy-name"

// service is one Service as the view lists it, with the endpoints of all
// its EndpointSlices.
type service struct {
	Namespace string               `json:"ns"`
	Name      string               `json:"name"`
	Type      corev1.ServiceType   `json:"type,omitempty"`
	ClusterIP string               `json:"ip,omitempty"`
	Ports     []corev1.ServicePort `json:"ports,omitempty"`
	Endpoints []endpoint           `json:"eps,omitempty"`
	// OtherProxy names the proxy that claims the Service, when one does:
	// kube-proxy then leaves it alone.
	OtherProxy string `json:"other,omitempty"`
}

// endpoint is one address of a Service's EndpointSlices.
type endpoint struct {
	Pod         string `json:"pod,omitempty"`
	IP          string `json:"ip"`
	Node        string `json:"node,omitempty"`
	Ready       bool   `json:"ready,omitempty"`
	Terminating bool   `json:"term,omitempty"`
}

func (s *service) key() string { return s.Namespace + "/" + s.Name }

// headless reports whether the Service has no ClusterIP to proxy.
func (s *service) headless() bool {
	return s.ClusterIP == "" || s.ClusterIP == corev1.ClusterIPNone
}

// proxied reports whether kube-proxy programs rules for the Service.
func (s *service) proxied() bool {
	return !s.headless() && s.Type != corev1.ServiceTypeExternalName && s.OtherProxy == ""
}

func (s *service) readyEndpoints() int {
	n := 0
	for _, e := range s.Endpoints {
		if e.Ready {
			n++
		}
	}
	return n
}

// buildServices lists services with their endpoints, sorted by namespace
// and name. It only reads the objects, which belong to the watch's cache.
func buildServices(svcs []*corev1.Service, eps []*discoveryv1.EndpointSlice) []service {
	out := make([]service, 0, len(svcs))
	index := map[string]int{}
	for _, s := range svcs {
		out = append(out, service{
			Namespace: s.Namespace, Name: s.Name, Type: s.Spec.Type, ClusterIP: s.Spec.ClusterIP,
			Ports: s.Spec.Ports, OtherProxy: s.Labels[labelServiceProxyName],
		})
	}
	slices.SortFunc(out, func(a, b service) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for i := range out {
		index[out[i].key()] = i
	}
	seen := map[string]map[string]bool{} // service key → endpoint IPs
	for _, sl := range eps {
		if sl.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		key := sl.Namespace + "/" + sl.Labels[discoveryv1.LabelServiceName]
		i, ok := index[key]
		if !ok {
			continue
		}
		if seen[key] == nil {
			seen[key] = map[string]bool{}
		}
		for _, e := range sl.Endpoints {
			if len(e.Addresses) == 0 || seen[key][e.Addresses[0]] {
				continue
			}
			seen[key][e.Addresses[0]] = true
			ep := endpoint{IP: e.Addresses[0],
				// An unknown readiness counts as ready, as the API asks
				// consumers to read it.
				Ready:       e.Conditions.Ready == nil || *e.Conditions.Ready,
				Terminating: e.Conditions.Terminating != nil && *e.Conditions.Terminating,
			}
			if e.TargetRef != nil && e.TargetRef.Kind == "Pod" {
				ep.Pod = e.TargetRef.Name
			}
			if e.NodeName != nil {
				ep.Node = *e.NodeName
			}
			out[i].Endpoints = append(out[i].Endpoints, ep)
		}
	}
	for i := range out {
		slices.SortFunc(out[i].Endpoints, func(a, b endpoint) int {
			return cmp.Or(cmp.Compare(a.Pod, b.Pod), cmp.Compare(a.IP, b.IP))
		})
	}
	return out
}

// firstChoice is the service to show first: the first one in the default
// namespace other than the API server's own, else the first.
func firstChoice(svcs []service) string {
	for _, s := range svcs {
		if s.Namespace == "default" && s.Name != "kubernetes" {
			return s.key()
		}
	}
	if len(svcs) > 0 {
		return svcs[0].key()
	}
	return ""
}
