package dns

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// fixture objects: Services of every kind and the EndpointSlices of the
// headless ones.
func fixtureObjects() []runtime.Object {
	svc := func(ns, name, clusterIP string, ports ...corev1.ServicePort) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{ClusterIP: clusterIP, Ports: ports, Type: corev1.ServiceTypeClusterIP}}
		if clusterIP != corev1.ClusterIPNone {
			s.Spec.ClusterIPs = []string{clusterIP}
		}
		return s
	}
	port := func(name string, n int32, proto corev1.Protocol) corev1.ServicePort {
		return corev1.ServicePort{Name: name, Port: n, Protocol: proto}
	}
	ext := func(name, target string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: target}}
	}
	dual := svc("default", "dual", "10.96.0.60", port("http", 80, corev1.ProtocolTCP))
	dual.Spec.ClusterIPs = []string{"10.96.0.60", "fd00:10:96::60"}
	ep := func(ip, hostname string, ready bool) discoveryv1.Endpoint {
		e := discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}
		if hostname != "" {
			e.Hostname = ptr.To(hostname)
		}
		return e
	}
	slice := func(service, name string, ports []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: service}},
			AddressType: discoveryv1.AddressTypeIPv4, Endpoints: eps, Ports: ports,
		}
	}
	pgPorts := []discoveryv1.EndpointPort{{Name: ptr.To("pg"), Port: ptr.To[int32](5432), Protocol: ptr.To(corev1.ProtocolTCP)}}
	return []runtime.Object{
		svc("default", "kubernetes", "10.96.0.1", port("https", 443, corev1.ProtocolTCP)),
		svc("kube-system", "kube-dns", "10.96.0.10", port("dns", 53, corev1.ProtocolUDP), port("dns-tcp", 53, corev1.ProtocolTCP), port("metrics", 9153, corev1.ProtocolTCP)),
		svc("default", "web", "10.96.0.50", port("http", 80, corev1.ProtocolTCP), port("", 8443, corev1.ProtocolTCP)),
		dual,
		svc("default", "db", corev1.ClusterIPNone, port("pg", 5432, corev1.ProtocolTCP)),
		slice("db", "db-abc", pgPorts, ep("10.244.1.5", "db-0", true), ep("10.244.2.6", "db-1", true), ep("10.244.1.7", "db-2", false)),
		svc("default", "anon", corev1.ClusterIPNone, port("pg", 5432, corev1.ProtocolTCP)),
		slice("anon", "anon-abc", pgPorts, ep("10.244.3.3", "", true)),
		svc("default", "empty", corev1.ClusterIPNone),
		slice("empty", "empty-abc", nil, ep("10.244.3.9", "", false)),
		ext("ext", "www.example.com"),
		ext("alias", "web.default.svc.cluster.local"),
		// web's own slice, which a ClusterIP Service has too: its
		// endpoints get no PTR records (only headless ones do).
		slice("web", "web-abc", []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}}, ep("10.244.1.20", "", true)),
	}
}

// startServer starts a server fed by a fake clientset holding objs.
func startServer(t testing.TB, objs ...runtime.Object) (*Server, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	s, err := New(Config{Client: client, Listen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", Identity: "master-1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return s, client
}

// query asks the server one question over net ("udp" or "tcp").
func query(t testing.TB, s *Server, network, name string, qtype uint16) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: network, Timeout: 5 * time.Second}
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	r, _, err := c.Exchange(m, s.Addr())
	if err != nil {
		t.Fatalf("%s %s over %s: %v", name, dns.TypeToString[qtype], network, err)
	}
	return r
}

// rrs writes records as "name TYPE rdata", without TTL and class, sorted.
func rrs(list []dns.RR) []string {
	var out []string
	for _, rr := range list {
		if rr.Header().Rrtype == dns.TypeOPT {
			continue
		}
		h := rr.Header()
		rdata := strings.TrimPrefix(rr.String(), h.String())
		out = append(out, h.Name+" "+dns.TypeToString[h.Rrtype]+" "+rdata)
	}
	slices.Sort(out)
	return out
}

func bigSlice(service string, n int) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: service + "-abc", Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for i := range n {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.244.9." + strconv.Itoa(i+1)}})
	}
	return s
}
