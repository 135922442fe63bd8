package printers

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestNodeCells(t *testing.T) {
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue}
	info := corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", OSImage: "klab", KernelVersion: "6.8.0", ContainerRuntimeVersion: "klab://1.0"}
	addresses := []corev1.NodeAddress{
		{Type: corev1.NodeHostName, Address: "worker-1"},
		{Type: corev1.NodeInternalIP, Address: "172.18.0.3"},
		{Type: corev1.NodeExternalIP, Address: "203.0.113.7"},
	}
	tests := []struct {
		name string
		node *corev1.Node
		want []any
	}{
		{
			name: "ready control plane",
			node: &corev1.Node{
				ObjectMeta: withLabels(objectMeta("master-1", 50*time.Hour), map[string]string{"node-role.kubernetes.io/control-plane": ""}),
				Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{ready}, NodeInfo: info, Addresses: addresses},
			},
			want: []any{"master-1", "Ready", "control-plane", "2d2h", "v1.37.2", "172.18.0.3", "203.0.113.7", "klab", "6.8.0", "klab://1.0"},
		},
		{
			name: "cordoned, roles sorted from both label forms",
			node: &corev1.Node{
				ObjectMeta: withLabels(objectMeta("worker-1", 5*time.Minute), map[string]string{
					"node-role.kubernetes.io/worker": "",
					"kubernetes.io/role":             "ingress",
					"node-role.kubernetes.io/":       "",
				}),
				Spec:   corev1.NodeSpec{Unschedulable: true},
				Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{ready}, NodeInfo: info},
			},
			want: []any{"worker-1", "Ready,SchedulingDisabled", "ingress,worker", "5m", "v1.37.2", "<none>", "<none>", "klab", "6.8.0", "klab://1.0"},
		},
		{
			name: "kubelet stopped posting status",
			node: &corev1.Node{
				ObjectMeta: objectMeta("worker-2", time.Hour),
				Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
					{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionUnknown},
					{Type: corev1.NodeReady, Status: corev1.ConditionUnknown},
				}},
			},
			want: []any{"worker-2", "NotReady", "<none>", "60m", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"},
		},
		{
			name: "never reported",
			node: &corev1.Node{ObjectMeta: objectMeta("worker-3", 30*time.Second), Spec: corev1.NodeSpec{Unschedulable: true}},
			want: []any{"worker-3", "Unknown,SchedulingDisabled", "<none>", "30s", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertCells(t, rowCells(t, tt.node), tt.want)
		})
	}
}

func TestServiceCells(t *testing.T) {
	tcp := func(port, nodePort int32) corev1.ServicePort {
		return corev1.ServicePort{Port: port, NodePort: nodePort, Protocol: corev1.ProtocolTCP}
	}
	tests := []struct {
		name string
		spec corev1.ServiceSpec
		lb   []corev1.LoadBalancerIngress
		want []any // TYPE CLUSTER-IP EXTERNAL-IP PORT(S) (AGE) SELECTOR
	}{
		{
			name: "cluster IP",
			spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"},
				Ports:    []corev1.ServicePort{tcp(53, 0), {Port: 53, Protocol: corev1.ProtocolUDP}},
				Selector: map[string]string{"k8s-app": "kube-dns"}},
			want: []any{"ClusterIP", "10.96.0.10", "<none>", "53/TCP,53/UDP", "k8s-app=kube-dns"},
		},
		{
			name: "headless without ports",
			spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "None", ClusterIPs: []string{"None"}},
			want: []any{"ClusterIP", "None", "<none>", "<none>", "<none>"},
		},
		{
			name: "clusterIP stands in for a missing clusterIPs",
			spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{tcp(443, 0)}},
			want: []any{"ClusterIP", "10.96.0.1", "<none>", "443/TCP", "<none>"},
		},
		{
			name: "node port with external IPs",
			spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIPs: []string{"10.96.1.2"}, ExternalIPs: []string{"198.51.100.1", "198.51.100.2"},
				Ports: []corev1.ServicePort{tcp(80, 30080)}, Selector: map[string]string{"app": "web"}},
			want: []any{"NodePort", "10.96.1.2", "198.51.100.1,198.51.100.2", "80:30080/TCP", "app=web"},
		},
		{
			name: "load balancer waiting for an address",
			spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.96.1.3"}, Ports: []corev1.ServicePort{tcp(80, 31000)}},
			want: []any{"LoadBalancer", "10.96.1.3", "<pending>", "80:31000/TCP", "<none>"},
		},
		{
			name: "load balancer ingress sorted, then external IPs, never shortened",
			spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.96.1.4"}, ExternalIPs: []string{"198.51.100.9"}},
			lb:   []corev1.LoadBalancerIngress{{Hostname: "lb.example.com"}, {IP: "203.0.113.20"}, {IP: "203.0.113.10"}},
			want: []any{"LoadBalancer", "10.96.1.4", "203.0.113.10,203.0.113.20,lb.example.com,198.51.100.9", "<none>", "<none>"},
		},
		{
			name: "external name",
			spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"},
			want: []any{"ExternalName", "<none>", "db.example.com", "<none>", "<none>"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := &corev1.Service{ObjectMeta: objectMeta("svc", 3*time.Hour), Spec: tt.spec}
			svc.Status.LoadBalancer.Ingress = tt.lb
			want := append([]any{"svc"}, tt.want[:4]...)
			want = append(want, "3h", tt.want[4])
			assertCells(t, rowCells(t, svc), want)
		})
	}
}

func TestEndpointsCells(t *testing.T) {
	addrs := func(ips ...string) []corev1.EndpointAddress {
		var out []corev1.EndpointAddress
		for _, ip := range ips {
			out = append(out, corev1.EndpointAddress{IP: ip})
		}
		return out
	}
	tests := []struct {
		name    string
		subsets []corev1.EndpointSubset
		want    string
	}{
		{name: "no subsets", want: "<none>"},
		{
			name:    "two addresses, one port",
			subsets: []corev1.EndpointSubset{{Addresses: addrs("10.244.1.5", "10.244.2.7"), Ports: []corev1.EndpointPort{{Port: 8080}}}},
			want:    "10.244.1.5:8080,10.244.2.7:8080",
		},
		{
			name:    "more than three",
			subsets: []corev1.EndpointSubset{{Addresses: addrs("10.0.0.1", "10.0.0.2", "10.0.0.3"), Ports: []corev1.EndpointPort{{Port: 80}, {Port: 443}}}},
			want:    "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 3 more...",
		},
		{
			name:    "headless service without ports",
			subsets: []corev1.EndpointSubset{{Addresses: addrs("10.0.0.1")}, {Addresses: addrs("fd00::1")}},
			want:    "10.0.0.1,fd00::1",
		},
		{
			name:    "IPv6 with a port",
			subsets: []corev1.EndpointSubset{{Addresses: addrs("fd00::1"), Ports: []corev1.EndpointPort{{Port: 80}}}},
			want:    "[fd00::1]:80",
		},
		{
			name:    "only not-ready addresses",
			subsets: []corev1.EndpointSubset{{NotReadyAddresses: addrs("10.0.0.1"), Ports: []corev1.EndpointPort{{Port: 80}}}},
			want:    "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := &corev1.Endpoints{ObjectMeta: objectMeta("web", time.Minute), Subsets: tt.subsets}
			assertCells(t, rowCells(t, ep), []any{"web", tt.want, "60s"})
		})
	}
}

func TestEndpointSliceCells(t *testing.T) {
	tests := []struct {
		name  string
		slice discoveryv1.EndpointSlice
		want  []any // ADDRESSTYPE PORTS ENDPOINTS
	}{
		{
			name:  "empty",
			slice: discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4},
			want:  []any{"IPv4", "<unset>", "<unset>"},
		},
		{
			name: "ports by number, name or neither",
			slice: discoveryv1.EndpointSlice{
				AddressType: discoveryv1.AddressTypeIPv4,
				Ports:       []discoveryv1.EndpointPort{{Port: ptr(int32(80))}, {Name: ptr("metrics")}, {}},
				Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}}, {Addresses: []string{"10.244.2.7"}}},
			},
			want: []any{"IPv4", "80,metrics,*", "10.244.1.5,10.244.2.7"},
		},
		{
			name: "more than three of each",
			slice: discoveryv1.EndpointSlice{
				AddressType: discoveryv1.AddressTypeIPv6,
				Ports:       []discoveryv1.EndpointPort{{Port: ptr(int32(1))}, {Port: ptr(int32(2))}, {Port: ptr(int32(3))}, {Port: ptr(int32(4))}},
				Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"fd00::1", "fd00::2"}}, {Addresses: []string{"fd00::3", "fd00::4", "fd00::5"}}},
			},
			want: []any{"IPv6", "1,2,3 + 1 more...", "fd00::1,fd00::2,fd00::3 + 2 more..."},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			slice := tt.slice
			slice.ObjectMeta = objectMeta("web-abcde", 2*time.Minute)
			want := append([]any{"web-abcde"}, tt.want...)
			assertCells(t, rowCells(t, &slice), append(want, "2m"))
		})
	}
}

func TestSmallCoreCells(t *testing.T) {
	tests := []struct {
		name string
		obj  runtime.Object
		want []any
	}{
		{
			name: "namespace",
			obj:  &corev1.Namespace{ObjectMeta: objectMeta("kube-system", 400*24*time.Hour), Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
			want: []any{"kube-system", "Active", "400d"},
		},
		{
			name: "namespace being deleted",
			obj:  &corev1.Namespace{ObjectMeta: objectMeta("old", 3*365*24*time.Hour+24*time.Hour), Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
			want: []any{"old", "Terminating", "3y1d"},
		},
		{
			name: "config map counts data and binary data",
			obj: &corev1.ConfigMap{ObjectMeta: objectMeta("settings", 45*time.Second),
				Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"c": {3}}},
			want: []any{"settings", int64(3), "45s"},
		},
		{
			name: "secret counts string data not already in data",
			obj: &corev1.Secret{ObjectMeta: objectMeta("creds", 8*time.Hour), Type: corev1.SecretTypeOpaque,
				Data: map[string][]byte{"user": []byte("a"), "pass": []byte("b")}, StringData: map[string]string{"pass": "c", "token": "d"}},
			want: []any{"creds", "Opaque", int64(3), "8h"},
		},
		{
			name: "service account",
			obj:  &corev1.ServiceAccount{ObjectMeta: objectMeta("default", 7*time.Hour+30*time.Minute)},
			want: []any{"default", int64(0), "7h30m"},
		},
		{
			name: "lease held",
			obj:  &coordinationv1.Lease{ObjectMeta: objectMeta("kube-scheduler", 20*time.Minute), Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("master-1_8f2c")}},
			want: []any{"kube-scheduler", "master-1_8f2c", "20m"},
		},
		{
			name: "lease free",
			obj:  &coordinationv1.Lease{ObjectMeta: objectMeta("kube-controller-manager", 9*time.Minute+5*time.Second)},
			want: []any{"kube-controller-manager", "", "9m5s"},
		},
		{
			name: "never created",
			obj:  &corev1.ConfigMap{},
			want: []any{"", int64(0), "<unknown>"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertCells(t, rowCells(t, tt.obj), tt.want)
		})
	}
}
