package proxier

import (
	"bytes"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

func TestNFTablesRenderParsesBack(t *testing.T) {
	clock := newTestClock()
	m := newMode(t, ModeNFTables, clock)
	res := m.Sync(mixedSnapshot())
	if _, err := m.Pick(web, podClient, ViaClusterIP, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := m.Render(&buf); err != nil {
		t.Fatal(err)
	}
	rs, err := parseNFT(buf.String())
	if err != nil {
		t.Fatalf("nft output does not parse: %v\n%s", err, buf.String())
	}
	if rs.family != "ip" || rs.name != "kube-proxy" {
		t.Errorf("table %s %s, want ip kube-proxy", rs.family, rs.name)
	}

	// The services chain dispatches through the maps, not per-service rules.
	if got := strings.Join(rs.chains["services"], "\n"); !strings.Contains(got, "vmap @service-ips") || !strings.Contains(got, "vmap @service-nodeports") {
		t.Errorf("services chain:\n%s", got)
	}
	webChain := "service-" + nftServiceBase(web)
	if !regexp.MustCompile(`^service-[A-Z2-7]{8}-default/web/tcp/http$`).MatchString(webChain) {
		t.Errorf("chain name %s does not follow upstream's service-HASH-ns/name/proto/port", webChain)
	}
	if got, want := rs.sets["service-ips"], "10.96.0.10 . tcp . 80 : goto "+webChain; !containsString(got, want) {
		t.Errorf("service-ips = %v, want an element %q", got, want)
	}
	var numgen string
	for _, r := range rs.chains[webChain] {
		if strings.HasPrefix(r, "numgen ") {
			numgen = r
		}
	}
	m3 := regexp.MustCompile(`^numgen random mod 3 vmap \{ 0 : goto (endpoint-\S+), 1 : goto (endpoint-\S+), 2 : goto (endpoint-\S+) \}$`).FindStringSubmatch(numgen)
	if m3 == nil {
		t.Fatalf("web chain numgen rule = %q, want mod 3 with 3 endpoint chains", numgen)
	}
	for i, ip := range []string{"10.244.1.5", "10.244.2.5", "10.244.3.5"} {
		if !strings.HasSuffix(m3[i+1], "__"+ip+"/8080") {
			t.Errorf("numgen entry %d goes to %s, want the chain of %s", i, m3[i+1], ip)
		}
		if !containsString(rs.chains[m3[i+1]], "meta l4proto tcp dnat to "+ip+":8080") {
			t.Errorf("%s does not DNAT to %s:8080: %v", m3[i+1], ip, rs.chains[m3[i+1]])
		}
	}
	noEndpoints := strings.Join(rs.sets["no-endpoint-services"], "\n")
	for _, want := range []string{`10.96.0.12 . tcp . 80 comment "default/empty:http" : goto reject-chain`,
		`10.96.0.13 . tcp . 80 comment "default/itp:http" : drop`} {
		if !strings.Contains(noEndpoints, want) {
			t.Errorf("no-endpoint-services lacks %q:\n%s", want, noEndpoints)
		}
	}
	// The affinity set of the endpoint the pick reached holds the client.
	affinitySets := 0
	for name, elems := range rs.sets {
		if strings.HasPrefix(name, "affinity-") {
			affinitySets++
			for _, e := range elems {
				if !strings.HasPrefix(e, podClient+" timeout 1m expires ") {
					t.Errorf("affinity set %s element %q", name, e)
				}
			}
		}
	}
	if affinitySets != 3 {
		t.Errorf("%d affinity sets, want one per web endpoint", affinitySets)
	}
	rules := 0
	for _, r := range rs.chains {
		rules += len(r)
	}
	for _, name := range []string{"service-ips", "service-nodeports", "no-endpoint-services", "no-endpoint-nodeports"} {
		rules += len(rs.sets[name])
	}
	if rules != res.Rules {
		t.Errorf("Sync counted %d, the listing has %d rules and verdict map elements", res.Rules, rules)
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestNFTablesNumgenScalesLikeTheKernel(t *testing.T) {
	// reciprocal_scale maps the 32-bit range onto [0, N) in N equal runs.
	m, err := NewNFTables(testConfig(newTestClock()))
	if err != nil {
		t.Fatal(err)
	}
	m.Sync(webSnapshot(threeEndpoints))
	chain := m.state.byName["service-"+nftServiceBase(web)]
	rule := chain.rules[len(chain.rules)-1]
	for _, tt := range []struct {
		random uint32
		want   string
	}{{0, "10.244.1.5"}, {1431655765, "10.244.1.5"}, {1431655766, "10.244.2.5"}, {0xFFFFFFFF, "10.244.3.5"}} {
		n := uint64(len(rule.targets))
		target := rule.targets[(uint64(tt.random)*n)>>32]
		if !strings.Contains(target.name, "__"+tt.want+"/") {
			t.Errorf("random %d goes to %s, want %s", tt.random, target.name, tt.want)
		}
	}
}
