package proxier

import (
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

func nn(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestBuildSnapshotServices(t *testing.T) {
	multi := service("shop", "api", "10.96.1.1", withNodePort(30100), withExternalLocal(), withInternalLocal(), withAffinity(30))
	multi.Spec.Ports = append(multi.Spec.Ports, corev1.ServicePort{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP})
	noTimeout := service("shop", "sticky", "10.96.1.2")
	noTimeout.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	headless := service("shop", "db", corev1.ClusterIPNone)
	external := service("shop", "ext", "")
	external.Spec.Type = corev1.ServiceTypeExternalName
	v6 := service("shop", "v6", "fd00::1")
	// externalTrafficPolicy means nothing on a ClusterIP service.
	clusterOnly := service("shop", "plain", "10.96.1.3", withExternalLocal())

	snap := BuildSnapshot(testNode, []*corev1.Service{multi, noTimeout, headless, external, v6, clusterOnly, nil}, nil)

	http := snap.Services[ServicePortName{NamespacedName: nn("shop", "api"), Port: "http", Protocol: corev1.ProtocolTCP}]
	dns := snap.Services[ServicePortName{NamespacedName: nn("shop", "api"), Port: "dns", Protocol: corev1.ProtocolUDP}]
	if http == nil || dns == nil {
		t.Fatalf("want both ports of shop/api, got %v", snap.ServiceNames())
	}
	if http.ClusterIP != mustAddr("10.96.1.1") || http.Port != 80 || http.NodePort != 30100 ||
		!http.InternalPolicyLocal || !http.ExternalPolicyLocal ||
		http.SessionAffinity != corev1.ServiceAffinityClientIP || http.StickyMaxAgeSeconds != 30 {
		t.Errorf("shop/api:http = %+v", *http)
	}
	if got := http.Name.String(); got != "shop/api:http" {
		t.Errorf("String() = %q, want shop/api:http", got)
	}
	sticky := snap.Services[ServicePortName{NamespacedName: nn("shop", "sticky"), Port: "http", Protocol: corev1.ProtocolTCP}]
	if sticky == nil || sticky.StickyMaxAgeSeconds != 10800 {
		t.Errorf("ClientIP affinity without a timeout: %+v, want the 10800 s default", sticky)
	}
	plain := snap.Services[ServicePortName{NamespacedName: nn("shop", "plain"), Port: "http", Protocol: corev1.ProtocolTCP}]
	if plain == nil || plain.ExternalPolicyLocal {
		t.Errorf("ClusterIP service: %+v, want ExternalPolicyLocal false", plain)
	}
	if len(snap.Services) != 4 {
		t.Errorf("proxied %v, want api (2 ports), sticky and plain", snap.ServiceNames())
	}
	var skipped []string
	for _, err := range snap.Skipped {
		skipped = append(skipped, err.Error())
	}
	all := strings.Join(skipped, "\n")
	for _, want := range []string{`service shop/v6: spec.clusterIP "fd00::1" is not an IPv4 address`, "services[6]: nil Service"} {
		if !strings.Contains(all, want) {
			t.Errorf("Skipped does not say %q:\n%s", want, all)
		}
	}
	if len(snap.Skipped) != 2 {
		t.Errorf("headless and ExternalName services are normal, not skipped errors:\n%s", all)
	}
}

func TestBuildSnapshotEndpoints(t *testing.T) {
	a := slice("default", "web",
		ep{ip: "10.244.2.5", node: "worker-2"},
		ep{ip: "10.244.1.10", node: testNode, notReady: true, serving: true, terminating: true},
		ep{ip: "10.244.1.9", node: testNode},
	)
	// A second slice repeats an endpoint (the first copy is kept) and
	// carries one more.
	b := slice("default", "web", ep{ip: "10.244.2.5", node: "worker-9"}, ep{ip: "10.244.3.5", node: "worker-3"})
	b.Name = "web-def"
	noLabel := slice("default", "web")
	noLabel.Name, noLabel.Labels = "stray", nil
	v6 := slice("default", "web", ep{ip: "fd00::5"})
	v6.Name, v6.AddressType = "web-v6", discoveryv1.AddressTypeIPv6
	badAddr := slice("default", "web", ep{ip: "not-an-ip"})
	badAddr.Name = "web-bad"
	noDefaults := slice("default", "web", ep{ip: "10.244.4.4"})
	noDefaults.Name = "web-nil"
	noDefaults.Endpoints[0].Conditions = discoveryv1.EndpointConditions{}
	noDefaults.Endpoints[0].NodeName = nil

	snap := BuildSnapshot(testNode, []*corev1.Service{service("default", "web", "10.96.0.10")},
		[]*discoveryv1.EndpointSlice{b, a, noLabel, v6, badAddr, noDefaults})

	eps := snap.Endpoints[web]
	var got []string
	for _, e := range eps {
		got = append(got, e.String())
	}
	want := "10.244.1.10:8080 10.244.1.9:8080 10.244.2.5:8080 10.244.3.5:8080 10.244.4.4:8080"
	if strings.Join(got, " ") != want {
		t.Fatalf("endpoints = %v, want %s (sorted as strings, duplicates merged)", got, want)
	}
	byIP := map[string]Endpoint{}
	for _, e := range eps {
		byIP[e.IP.String()] = e
	}
	if e := byIP["10.244.1.10"]; e.Ready || !e.Serving || !e.Terminating || !e.IsLocal {
		t.Errorf("terminating local endpoint = %+v", e)
	}
	if e := byIP["10.244.1.9"]; !e.Ready || !e.IsLocal || e.NodeName != testNode || e.Pod != "web-2" {
		t.Errorf("ready local endpoint = %+v", e)
	}
	if e := byIP["10.244.2.5"]; e.NodeName != "worker-2" {
		t.Errorf("duplicate endpoint kept from %q, want the first slice (web-abc) in name order", e.NodeName)
	}
	if e := byIP["10.244.4.4"]; !e.Ready || !e.Serving || e.Terminating || e.IsLocal {
		t.Errorf("nil conditions = %+v, want ready and serving, not terminating, not local", e)
	}
	all := ""
	for _, err := range snap.Skipped {
		all += err.Error() + "\n"
	}
	for _, want := range []string{"endpointslice default/stray: no kubernetes.io/service-name label",
		`endpointslice default/web-bad: endpoints[0]: address "not-an-ip" is not an IPv4 address`} {
		if !strings.Contains(all, want) {
			t.Errorf("Skipped does not say %q:\n%s", want, all)
		}
	}
}

func TestCategorize(t *testing.T) {
	local := Endpoint{IP: mustAddr("10.244.1.5"), Port: 80, IsLocal: true, Ready: true, Serving: true}
	remote := Endpoint{IP: mustAddr("10.244.2.5"), Port: 80, Ready: true, Serving: true}
	localTerminating := Endpoint{IP: mustAddr("10.244.1.6"), Port: 80, IsLocal: true, Serving: true, Terminating: true}
	notReady := Endpoint{IP: mustAddr("10.244.2.6"), Port: 80}
	tests := []struct {
		name                  string
		svc                   ServiceInfo
		eps                   []Endpoint
		cluster, local, reach int
		hasAny                bool
	}{
		{"cluster policy", ServiceInfo{}, []Endpoint{local, remote, notReady}, 2, 0, 2, true},
		{"internal local", ServiceInfo{InternalPolicyLocal: true}, []Endpoint{local, remote}, 0, 1, 1, true},
		{"internal local, none here", ServiceInfo{InternalPolicyLocal: true}, []Endpoint{remote}, 0, 0, 0, true},
		{"external local nodeport", ServiceInfo{NodePort: 30000, ExternalPolicyLocal: true}, []Endpoint{local, remote}, 2, 1, 2, true},
		{"local falls back to terminating", ServiceInfo{InternalPolicyLocal: true}, []Endpoint{localTerminating, remote}, 0, 1, 1, true},
		{"nothing usable", ServiceInfo{}, []Endpoint{notReady}, 0, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := categorize(&tt.svc, tt.eps)
			if len(s.cluster) != tt.cluster || len(s.local) != tt.local || len(s.reachable) != tt.reach || s.hasAny != tt.hasAny {
				t.Errorf("cluster %d local %d reachable %d hasAny %v; want %d %d %d %v",
					len(s.cluster), len(s.local), len(s.reachable), s.hasAny, tt.cluster, tt.local, tt.reach, tt.hasAny)
			}
		})
	}
}
