package proxier

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

func TestChainNamesMatchUpstream(t *testing.T) {
	// Chain names every Kubernetes cluster has, and the ones upstream's
	// proxier tests expect: the same input must give the same name here.
	tests := []struct{ got, want string }{
		{clusterPolicyChainPrefix + portProtoHash("default/kubernetes:https", "tcp"), "KUBE-SVC-NPX46M4PTMTKRN6Y"},
		{clusterPolicyChainPrefix + portProtoHash("kube-system/kube-dns:dns", "udp"), "KUBE-SVC-TCOU7JCQXEZGVUNU"},
		{clusterPolicyChainPrefix + portProtoHash("ns1/svc1:p80", "tcp"), "KUBE-SVC-XPGD46QRK7WJZT7O"},
		{endpointChainName("ns1/svc1:p80", "tcp", "10.180.0.1:80"), "KUBE-SEP-SXIVWICOYRO3J4NJ"},
		{nftClusterPolicyPrefix + nftServiceBase(ServicePortName{NamespacedName: nn("ns1", "svc1"), Port: "p80", Protocol: corev1.ProtocolTCP}),
			"service-ULMVA6XW-ns1/svc1/tcp/p80"},
		{nftEndpointPrefix + nftEndpointBase(ServicePortName{NamespacedName: nn("ns1", "svc1"), Port: "p80", Protocol: corev1.ProtocolTCP},
			Endpoint{IP: mustAddr("10.180.0.1"), Port: 80}), "endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("chain name %s, want %s", tt.got, tt.want)
		}
	}
}

func TestIPTablesStatisticThreshold(t *testing.T) {
	// iptables stores lround(p * 2^31) and the kernel matches when
	// (random & 0x7FFFFFFF) < threshold.
	tests := []struct {
		n    int
		text string
		want uint32
	}{
		{2, "0.5000000000", 1 << 30},
		{3, "0.3333333333", 715827883},
		{10, "0.1000000000", 214748365},
	}
	for _, tt := range tests {
		if got := probability(tt.n); got != tt.text {
			t.Errorf("probability(%d) = %s, want %s", tt.n, got, tt.text)
		}
		if got := newRule().probability(tt.text).threshold; got != tt.want {
			t.Errorf("threshold of %s = %d, want %d", tt.text, got, tt.want)
		}
	}
}

// mixedSnapshot has one service of each interesting kind.
func mixedSnapshot() *Snapshot {
	return BuildSnapshot(testNode,
		[]*corev1.Service{
			service("default", "web", "10.96.0.10", withNodePort(30080), withAffinity(60)),
			service("default", "local", "10.96.0.11", withNodePort(30081), withExternalLocal()),
			service("default", "empty", "10.96.0.12", withNodePort(30082)),
			service("default", "itp", "10.96.0.13", withInternalLocal()),
		},
		[]*discoveryv1.EndpointSlice{
			slice("default", "web", threeEndpoints...),
			slice("default", "local", threeEndpoints...),
			slice("default", "itp", threeEndpoints[1:]...),
		})
}

func TestIPTablesRenderParsesBack(t *testing.T) {
	m := newMode(t, ModeIPTables, newTestClock())
	res := m.Sync(mixedSnapshot())
	var buf bytes.Buffer
	if err := m.Render(&buf); err != nil {
		t.Fatal(err)
	}
	tables, err := parseIPTablesSave(buf.String())
	if err != nil {
		t.Fatalf("iptables-save output does not parse: %v\n%s", err, buf.String())
	}
	nat, filter := tables["nat"], tables["filter"]
	if nat == nil || filter == nil {
		t.Fatalf("want nat and filter tables, got %v", tables)
	}
	if got := strings.Count(buf.String(), "\n-A "); got != res.Rules {
		t.Errorf("Sync reported %d rules, the output has %d -A lines", res.Rules, got)
	}
	for _, c := range []string{"KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-MARK-MASQ", "KUBE-POSTROUTING"} {
		if !nat.declared[c] {
			t.Errorf("nat table lacks %s", c)
		}
	}

	// KUBE-SERVICES sends each ClusterIP to its service chain; the web
	// service's chain picks among 3 endpoints with 1/3, 1/2, then always.
	svcChain := "KUBE-SVC-" + portProtoHash("default/web:http", "tcp")
	var toWeb []string
	for _, r := range nat.rules["KUBE-SERVICES"] {
		if wordAfter(r, "-d") == "10.96.0.10" {
			toWeb = append(toWeb, wordAfter(r, "-j"))
		}
	}
	if len(toWeb) != 1 || toWeb[0] != svcChain {
		t.Errorf("KUBE-SERVICES sends 10.96.0.10 to %v, want [%s]", toWeb, svcChain)
	}
	var probs []string
	for _, r := range nat.rules[svcChain] {
		if strings.HasPrefix(wordAfter(r, "-j"), "KUBE-SEP-") && !contains(r, "--rcheck") {
			probs = append(probs, wordAfter(r, "--probability"))
		}
	}
	if got := strings.Join(probs, ","); got != "0.3333333333,0.5000000000," {
		t.Errorf("probabilities in %s = %q, want 0.3333333333, 0.5000000000, then unconditional", svcChain, got)
	}
	for _, r := range nat.rules[svcChain] {
		if contains(r, "--rcheck") && wordAfter(r, "--seconds") != "60" {
			t.Errorf("affinity rule %v does not check 60 seconds", r)
		}
	}
	dnats := 0
	for chain, rules := range nat.rules {
		if !strings.HasPrefix(chain, "KUBE-SEP-") {
			continue
		}
		for _, r := range rules {
			if wordAfter(r, "-j") == "DNAT" {
				dnats++
				if !strings.HasSuffix(wordAfter(r, "--to-destination"), ":8080") {
					t.Errorf("%s DNATs to %s", chain, wordAfter(r, "--to-destination"))
				}
			}
		}
	}
	// web: 3, local: 3 reachable, itp: none local (no chains).
	if dnats != 6 {
		t.Errorf("%d DNAT rules in KUBE-SEP chains, want 6", dnats)
	}

	// Services without endpoints are rejected, Local ones without local
	// endpoints dropped, in the filter table; nothing else is.
	var got []string
	for _, chain := range []string{"KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES"} {
		for _, r := range filter.rules[chain] {
			got = append(got, chain+" "+wordAfter(r, "--comment")+" "+wordAfter(r, "-j"))
		}
	}
	wantFilter := []string{
		`KUBE-SERVICES "default/empty:http has no endpoints" REJECT`,
		`KUBE-SERVICES "default/itp:http has no local endpoints" DROP`,
		`KUBE-EXTERNAL-SERVICES "default/empty:http has no endpoints" REJECT`,
	}
	if strings.Join(got, "\n") != strings.Join(wantFilter, "\n") {
		t.Errorf("filter rules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantFilter, "\n"))
	}
}

func contains(words []string, w string) bool {
	for _, x := range words {
		if x == w {
			return true
		}
	}
	return false
}

func TestIPTablesLargeClusterDropsEndpointComments(t *testing.T) {
	m := newMode(t, ModeIPTables, newTestClock())
	m.Sync(manyServices(101)) // 1010 endpoints: above upstream's 1000
	var buf bytes.Buffer
	if err := m.Render(&buf); err != nil {
		t.Fatal(err)
	}
	tables, err := parseIPTablesSave(buf.String())
	if err != nil {
		t.Fatal(err)
	}
	for chain, rules := range tables["nat"].rules {
		if strings.HasPrefix(chain, "KUBE-SEP-") {
			for _, r := range rules {
				if contains(r, "--comment") {
					t.Fatalf("large cluster: %s still has a comment: %v", chain, r)
				}
			}
		}
	}
	if !strings.Contains(buf.String(), `"bench/svc-0000:http cluster IP"`) {
		t.Error("large cluster: KUBE-SERVICES lost its comments, upstream keeps those")
	}
}

func TestIPTablesLookupWalksRulesInOrder(t *testing.T) {
	// The rule walk, not a map, finds the service: with two rules for the
	// same destination, the first one wins, as in netfilter.
	m, err := NewIPTables(testConfig(newTestClock()))
	if err != nil {
		t.Fatal(err)
	}
	m.Sync(webSnapshot(threeEndpoints))
	first := newRule().mProto("tcp").destination(mustAddr("10.96.0.10")).destPort(80).
		dnatTo(Endpoint{IP: mustAddr("10.244.99.99"), Port: 9})
	services := m.nat.byName[kubeServicesChain]
	services.rules = append([]*ipRule{first}, services.rules...)
	e, err := m.Pick(web, podClient, ViaClusterIP, rand.New(rand.NewPCG(1, 1)))
	if err != nil || e.IP.String() != "10.244.99.99" {
		t.Errorf("Pick = %v, %v; want the first matching rule's DNAT to 10.244.99.99", e, err)
	}
}
