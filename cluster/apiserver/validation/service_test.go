package validation

import (
	"testing"

	"github.com/klab-dev/klab/cluster/apiserver/defaults"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestServiceCreate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.Service)
		want   []string
	}{
		{name: "valid", mutate: func(*corev1.Service) {}},
		{
			name:   "no ports",
			mutate: func(s *corev1.Service) { s.Spec.Ports = nil },
			want:   []string{`spec.ports: Required value`},
		},
		{name: "headless needs no ports", mutate: func(s *corev1.Service) { s.Spec.Ports = nil; s.Spec.ClusterIP = "None" }},
		{
			name: "two ports need names",
			mutate: func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80}, {Port: 443}, {Name: "http", Port: 8080}}
			},
			want: []string{
				`spec.ports[1].name: Required value`,
				`spec.ports[2].name: Duplicate value: "http"`,
			},
		},
		{
			name: "port numbers",
			mutate: func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{{Port: 0, TargetPort: intstr.FromInt32(70000)}}
			},
			want: []string{
				`spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive`,
				`spec.ports[0].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive`,
			},
		},
		{
			name: "same port twice",
			mutate: func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{{Name: "a", Port: 80}, {Name: "b", Port: 80}}
			},
			want: []string{`spec.ports[1]: Duplicate value: {"protocol":"TCP","port":80,"targetPort":0}`},
		},
		{
			name:   "nodePort on a ClusterIP Service",
			mutate: func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30080 },
			want:   []string{"spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"},
		},
		{
			name:   "type",
			mutate: func(s *corev1.Service) { s.Spec.Type = "Internal" },
			want:   []string{`spec.type: Unsupported value: "Internal": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"`},
		},
		{
			name:   "session affinity",
			mutate: func(s *corev1.Service) { s.Spec.SessionAffinity = "Cookie" },
			want:   []string{`spec.sessionAffinity: Unsupported value: "Cookie": supported values: "ClientIP", "None"`},
		},
		{
			name: "affinity timeout over a day",
			mutate: func(s *corev1.Service) {
				s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
				s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](90000)}}
			},
			want: []string{`spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 90000: must be greater than 0 and less than 86400`},
		},
		{
			name:   "clusterIP not an IP",
			mutate: func(s *corev1.Service) { s.Spec.ClusterIP = "10.96.0.300" },
			want:   []string{`spec.clusterIPs[0]: Invalid value: "10.96.0.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`},
		},
		{
			name:   "clusterIPs out of step",
			mutate: func(s *corev1.Service) { s.Spec.ClusterIPs = []string{"10.96.0.11"} },
			want:   []string{"spec.clusterIPs: Invalid value: [\"10.96.0.11\"]: first value must match `clusterIP`"},
		},
		{
			name:   "headless NodePort",
			mutate: func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort; s.Spec.ClusterIP = "None" },
			want:   []string{`spec.clusterIPs[0]: Invalid value: "None": may not be set to 'None' for NodePort services`},
		},
		{
			name:   "ExternalName needs a name",
			mutate: func(s *corev1.Service) { s.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName} },
			want:   []string{`spec.externalName: Required value`},
		},
		{
			name: "ExternalName with IPs",
			mutate: func(s *corev1.Service) {
				s.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com", ClusterIP: "10.96.0.10"}
			},
			want: []string{`spec.clusterIPs: Forbidden: may not be set for ExternalName services`},
		},
		{
			name:   "externalIPs",
			mutate: func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"127.0.0.1"} },
			want:   []string{`spec.externalIPs[0]: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)`},
		},
		{
			name: "Local traffic policy on a ClusterIP Service",
			mutate: func(s *corev1.Service) {
				s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			},
			want: []string{`spec.externalTrafficPolicy: Invalid value: "Local": may only be set for externally-accessible services`},
		},
		{
			name:   "source ranges need a LoadBalancer",
			mutate: func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"} },
			want:   []string{"spec.LoadBalancerSourceRanges: Forbidden: may only be used when `type` is 'LoadBalancer'"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrors(t, ValidateCreate(validService(tt.mutate)), tt.want...)
		})
	}
}

func TestServiceUpdate(t *testing.T) {
	tests := []struct {
		name   string
		old    func(*corev1.Service)
		mutate func(*corev1.Service)
		want   []string
	}{
		{name: "ports change", mutate: func(s *corev1.Service) { s.Spec.Ports = []corev1.ServicePort{{Port: 8080}} }},
		{name: "to NodePort", mutate: func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort; s.Spec.ExternalTrafficPolicy = "" }},
		{
			name:   "clusterIP is immutable",
			mutate: func(s *corev1.Service) { s.Spec.ClusterIP = "10.96.0.99"; s.Spec.ClusterIPs = nil },
			want:   []string{`spec.clusterIPs[0]: Invalid value: ["10.96.0.99"]: may not change once set`},
		},
		{
			name:   "clusterIP may not be removed",
			mutate: func(s *corev1.Service) { s.Spec.ClusterIP = ""; s.Spec.ClusterIPs = nil },
			want:   []string{`spec.clusterIPs[0]: Invalid value: null: primary clusterIP can not be unset`},
		},
		{
			name: "to ExternalName drops the IPs",
			mutate: func(s *corev1.Service) {
				s.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"}
			},
		},
		{
			name:   "IP family is immutable",
			mutate: func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol} },
			want: []string{
				`spec.ipFamilies[0]: Invalid value: ["IPv6"]: may not change once set`,
				"spec.clusterIPs[0]: Invalid value: \"10.96.0.10\": expected an IPv6 value as indicated by `ipFamilies[0]`",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := validService()
			if tt.old != nil {
				tt.old(old)
			}
			svc := old.DeepCopy()
			tt.mutate(svc)
			defaults.Default(svc)
			checkErrors(t, ValidateUpdate(svc, old), tt.want...)
		})
	}
}

func TestServiceStatusUpdate(t *testing.T) {
	old := validService(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer })
	svc := old.DeepCopy()
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.10", IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)}, {IP: "203.0.113.11"}, {Hostname: "1.2.3.4"}}
	checkErrors(t, ValidateStatusUpdate(svc, old),
		"status.loadBalancer.ingress[1].ipMode: Required value: must be specified when `ip` is set",
		`status.loadBalancer.ingress[2].hostname: Invalid value: "1.2.3.4": must be a DNS name, not an IP address`,
	)

	clusterIP := validService()
	withIngress := clusterIP.DeepCopy()
	withIngress.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.10"}}
	checkErrors(t, ValidateStatusUpdate(withIngress, clusterIP),
		"status.loadBalancer.ingress: Forbidden: may only be used when `spec.type` is 'LoadBalancer'")
}

func TestEndpoints(t *testing.T) {
	tests := []struct {
		name    string
		subsets []corev1.EndpointSubset
		want    []string
	}{
		{name: "headless: no ports", subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "10.244.1.5"}}}}},
		{
			name:    "no addresses",
			subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Port: 80}}}},
			want:    []string{"subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`"},
		},
		{
			name: "bad addresses and ports",
			subsets: []corev1.EndpointSubset{{
				Addresses:         []corev1.EndpointAddress{{IP: "169.254.169.254"}},
				NotReadyAddresses: []corev1.EndpointAddress{{IP: "pod-1"}},
				Ports:             []corev1.EndpointPort{{Port: 80}, {Name: "b", Port: 81, Protocol: "QUIC"}},
			}},
			want: []string{
				`subsets[0].addresses[0].ip: Invalid value: "169.254.169.254": may not be in the link-local range (169.254.0.0/16, fe80::/10)`,
				`subsets[0].notReadyAddresses[0].ip: Invalid value: "pod-1": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`,
				`subsets[0].notReadyAddresses[0].ip: Invalid value: "pod-1": must be a valid IP address`,
				`subsets[0].ports[0].name: Required value`,
				`subsets[0].ports[1].protocol: Unsupported value: "QUIC": supported values: "SCTP", "TCP", "UDP"`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := &corev1.Endpoints{ObjectMeta: objectMeta("web"), Subsets: tt.subsets}
			defaults.Default(ep)
			checkErrors(t, ValidateCreate(ep), tt.want...)
		})
	}
}

func TestEndpointSlice(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*discoveryv1.EndpointSlice)
		want   []string
	}{
		{name: "valid", mutate: func(*discoveryv1.EndpointSlice) {}},
		{
			name:   "address type",
			mutate: func(s *discoveryv1.EndpointSlice) { s.AddressType = "IP" },
			want:   []string{`addressType: Unsupported value: "IP": supported values: "FQDN", "IPv4", "IPv6"`},
		},
		{
			name: "addresses",
			mutate: func(s *discoveryv1.EndpointSlice) {
				s.Endpoints = []discoveryv1.Endpoint{{}, {Addresses: []string{"fd00::1"}}}
			},
			want: []string{
				`endpoints[0].addresses: Required value: must contain at least 1 address`,
				`endpoints[1].addresses[0]: Invalid value: "fd00::1": must be an IPv4 address`,
			},
		},
		{
			name: "ports",
			mutate: func(s *discoveryv1.EndpointSlice) {
				s.Ports = []discoveryv1.EndpointPort{{Name: ptr.To("http")}, {Name: ptr.To("http")}, {Name: ptr.To("Metrics")}}
			},
			want: []string{
				`ports[1].name: Duplicate value: "http"`,
				`ports[2].name: Invalid value: "Metrics": ` + dnsLabelMsg,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			slice := &discoveryv1.EndpointSlice{ObjectMeta: objectMeta("web-abcde"), AddressType: discoveryv1.AddressTypeIPv4,
				Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}}}}
			tt.mutate(slice)
			defaults.Default(slice)
			checkErrors(t, ValidateCreate(slice), tt.want...)
		})
	}

	old := &discoveryv1.EndpointSlice{ObjectMeta: objectMeta("web-abcde"), AddressType: discoveryv1.AddressTypeIPv4}
	changed := old.DeepCopy()
	changed.AddressType = discoveryv1.AddressTypeIPv6
	checkErrors(t, ValidateUpdate(changed, old), `addressType: Invalid value: "IPv6": field is immutable`)
}
