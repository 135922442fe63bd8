package proxybench

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// The node the measured proxy runs on, and the cluster's address plan.
const (
	NodeName  = "worker-1"
	Namespace = "bench"

	// firstNodePort is the bottom of the NodePort range. Every service gets
	// one, so clusters above 2,768 services go past upstream's default range
	// (30000-32767), as --service-node-port-range allows; kube-proxy itself
	// does not look at the range.
	firstNodePort = 30000
	// maxEndpointsPerSlice is the EndpointSlice controller's default
	// --max-endpoints-per-slice.
	maxEndpointsPerSlice = 100
	workers              = 4
)

var (
	nodeIP      = netip.MustParseAddr("172.18.0.3")
	serviceCIDR = netip.MustParsePrefix("10.96.0.0/12")
	// podCIDR is wider than kind's 10.244.0.0/16 so that 5,000 services of
	// up to 50 endpoints each still fit.
	podCIDR = netip.MustParsePrefix("10.244.0.0/14")
)

// ProxyConfig is the configuration every measured mode runs with: this
// node's address and the pod network, so that traffic from pods is
// recognised as local (upstream's --detect-local-mode=ClusterCIDR).
func ProxyConfig() proxier.Config {
	return proxier.Config{NodeIP: nodeIP, ClusterCIDR: podCIDR}
}

// Cluster is what a kube-proxy watches in the measured cluster: NodePort
// Services (each also reachable on its ClusterIP) with one port, "http" 80
// to target port 8080, and their EndpointSlices with every endpoint ready.
type Cluster struct {
	Services       []*corev1.Service
	EndpointSlices []*discoveryv1.EndpointSlice

	endpoints int
}

// NewCluster builds a cluster of services Services with endpoints ready
// endpoints each, spread over four worker nodes. Service i is named
// svc-<i, five digits>, so the order in which the modes write their rules
// is the order of creation.
func NewCluster(services, endpoints int) (*Cluster, error) {
	if services < 1 || endpoints < 1 {
		return nil, fmt.Errorf("cluster of %d services with %d endpoints each: both must be at least 1", services, endpoints)
	}
	if firstNodePort+services-1 > 65535 {
		return nil, fmt.Errorf("%d services do not fit: each needs its own NodePort, and ports above 65535 do not exist", services)
	}
	// One address more than the endpoints, for the replacement pod of
	// WithEndpointReplaced; the last address of the range is its broadcast.
	if services*endpoints+2 > 1<<(32-podCIDR.Bits()) {
		return nil, fmt.Errorf("%d services × %d endpoints do not fit in the pod network %s", services, endpoints, podCIDR)
	}
	c := &Cluster{endpoints: endpoints}
	for i := 0; i < services; i++ {
		name := fmt.Sprintf("svc-%05d", i)
		c.Services = append(c.Services, newService(name, addrAt(serviceCIDR, i+1), int32(firstNodePort+i)))
		for first := 0; first < endpoints; first += maxEndpointsPerSlice {
			last := min(first+maxEndpointsPerSlice, endpoints)
			c.EndpointSlices = append(c.EndpointSlices, newEndpointSlice(name, first/maxEndpointsPerSlice, first, i*endpoints+first, last-first))
		}
	}
	return c, nil
}

// WithEndpointReplaced returns a copy of the cluster in which the first pod
// of the middle service was replaced by a pod at a new address, as a rolling
// update or a restarted pod does: the smallest change that makes a
// kube-proxy sync. The copy shares every other object with c.
func (c *Cluster) WithEndpointReplaced() *Cluster {
	svc := len(c.Services) / 2
	name := c.Services[svc].Name
	out := &Cluster{Services: c.Services, endpoints: c.endpoints}
	out.EndpointSlices = make([]*discoveryv1.EndpointSlice, len(c.EndpointSlices))
	copy(out.EndpointSlices, c.EndpointSlices)
	for i, s := range out.EndpointSlices {
		if s.Labels[discoveryv1.LabelServiceName] != name || len(s.Endpoints) == 0 {
			continue
		}
		s = s.DeepCopy()
		ep := &s.Endpoints[0]
		ep.Addresses = []string{addrAt(podCIDR, len(c.Services)*c.endpoints+1).String()}
		ep.TargetRef.Name += "-replaced"
		out.EndpointSlices[i] = s
		break
	}
	return out
}

// Snapshot is the proxy's view of the cluster from NodeName.
func (c *Cluster) Snapshot() *proxier.Snapshot {
	return proxier.BuildSnapshot(NodeName, c.Services, c.EndpointSlices)
}

func newService(name string, clusterIP netip.Addr, nodePort int32) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeNodePort,
			ClusterIP:             clusterIP.String(),
			ClusterIPs:            []string{clusterIP.String()},
			Selector:              map[string]string{"app": name},
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
			InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyCluster),
			SessionAffinity:       corev1.ServiceAffinityNone,
			Ports: []corev1.ServicePort{{
				Name:       "http",
				Protocol:   corev1.ProtocolTCP,
				Port:       80,
				TargetPort: intstr.FromInt32(8080),
				NodePort:   nodePort,
			}},
		},
	}
}

// newEndpointSlice is slice number index of a service, holding count ready
// pods: the service's pods firstPod onwards, at the addresses from offset
// firstAddr in the pod network.
func newEndpointSlice(service string, index, firstPod, firstAddr, count int) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: Namespace,
			Name:      fmt.Sprintf("%s-%d", service, index),
			Labels: map[string]string{
				discoveryv1.LabelServiceName: service,
				discoveryv1.LabelManagedBy:   "endpointslice-controller.k8s.io",
			},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{{
			Name:     ptr.To("http"),
			Protocol: ptr.To(corev1.ProtocolTCP),
			Port:     ptr.To[int32](8080),
		}},
	}
	for j := 0; j < count; j++ {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses: []string{addrAt(podCIDR, firstAddr+j+1).String()},
			Conditions: discoveryv1.EndpointConditions{
				Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false),
			},
			NodeName:  ptr.To(fmt.Sprintf("worker-%d", 1+(firstPod+j)%workers)),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: Namespace, Name: fmt.Sprintf("%s-%d", service, firstPod+j)},
		})
	}
	return s
}

// addrAt is the address offset places into the network p.
func addrAt(p netip.Prefix, offset int) netip.Addr {
	b := p.Masked().Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(offset)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
