package proxy

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// TestServiceRules cuts web's rules out of what the real proxier prints in
// every mode, next to web-local, whose name starts the same, and api.
func TestServiceRules(t *testing.T) {
	svcs, slices := fixtureObjects(false)
	svcs = append(svcs, svcObj("web-local", "10.96.23.200", 80, 8080, 30081))
	slices = append(slices, sliceObj("web-local", 8080, ep{"web-local-1", "10.244.1.9", "worker-1", true, false}))
	var web *service
	all := buildServices(svcs, slices)
	for i := range all {
		if all[i].key() == "default/web" {
			web = &all[i]
		}
	}
	others := []string{"web-local", "10.96.23.200", "30081", "default/api", "10.96.71.4", "default/kubernetes"}

	tests := []struct {
		mode  string
		check func(t *testing.T, lines []string)
	}{
		{proxier.ModeIPTables, func(t *testing.T, lines []string) {
			text := strings.Join(lines, "\n")
			svcChain := regexp.MustCompile(`-d 10\.96\.23\.117 --dport 80 -j (KUBE-SVC-\w+)`).FindStringSubmatch(text)
			if svcChain == nil {
				t.Fatalf("no KUBE-SERVICES rule for web:\n%s", text)
			}
			if n := len(regexp.MustCompile(`(?m)^-A `+svcChain[1]+` .*-j KUBE-SEP-`).FindAllString(text, -1)); n != 3 {
				t.Errorf("%s jumps to %d endpoints, want 3:\n%s", svcChain[1], n, text)
			}
			// KUBE-EXT jumps to KUBE-SVC without naming the Service.
			if !regexp.MustCompile(`(?m)^-A KUBE-EXT-\w+ -j ` + svcChain[1] + `$`).MatchString(text) {
				t.Errorf("the KUBE-EXT chain's jump to %s is missing:\n%s", svcChain[1], text)
			}
			for _, want := range []string{"*nat", ":" + svcChain[1] + " - [0:0]", "--dport 30080 -j KUBE-EXT-", "DNAT --to-destination 10.244.2.2:8080", "COMMIT"} {
				if !strings.Contains(text, want) {
					t.Errorf("lacks %q:\n%s", want, text)
				}
			}
		}},
		{proxier.ModeUserspace, func(t *testing.T, lines []string) {
			rules := 0
			for _, l := range lines {
				if strings.HasPrefix(l, "-A ") {
					rules++
					if !strings.Contains(l, "default/web ") {
						t.Errorf("rule not about web: %s", l)
					}
				}
			}
			if rules < 4 {
				t.Errorf("%d rules for web, want its portals and NodePorts:\n%s", rules, strings.Join(lines, "\n"))
			}
		}},
		{proxier.ModeIPVS, func(t *testing.T, lines []string) {
			var servers []string
			for _, l := range lines {
				if strings.HasPrefix(l, "TCP") {
					servers = append(servers, l)
				}
			}
			want := []string{"TCP  10.96.23.117:80 rr", "TCP  172.18.0.3:30080 rr"}
			if strings.Join(servers, "|") != strings.Join(want, "|") {
				t.Errorf("virtual servers %q, want %q", servers, want)
			}
			if !strings.HasPrefix(lines[0], "IP Virtual Server") || strings.Count(strings.Join(lines, "\n"), "-> 10.244.") != 6 {
				t.Errorf("want the header and three real servers for each virtual server:\n%s", strings.Join(lines, "\n"))
			}
		}},
		{proxier.ModeNFTables, func(t *testing.T, lines []string) {
			text := strings.Join(lines, "\n")
			for _, want := range []string{
				"table ip kube-proxy {", "elements = { 10.96.23.117 }", "10.96.23.117 . tcp . 80 : goto service-",
				"tcp . 30080 : goto external-", "numgen random mod 3 vmap", "dnat to 10.244.1.2:8080",
			} {
				if !strings.Contains(text, want) {
					t.Errorf("lacks %q:\n%s", want, text)
				}
			}
			for _, l := range lines {
				if strings.HasPrefix(strings.TrimSpace(l), "chain ") && !strings.Contains(l, "-default/web/") {
					t.Errorf("keeps a chain that is not web's: %s", l)
				}
			}
			if strings.TrimSpace(lines[len(lines)-1]) != "}" {
				t.Errorf("the table is not closed:\n%s", text)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			lines := serviceRules(renderRules(t, tt.mode, "worker-1", svcs, slices), web)
			if len(lines) == 0 {
				t.Fatal("no rules for web")
			}
			for _, l := range lines {
				for _, o := range others {
					if strings.Contains(l, o) {
						t.Errorf("line about another Service (%s): %s", o, l)
					}
				}
			}
			tt.check(t, lines)
		})
	}
}

func TestServiceRulesOfUnproxied(t *testing.T) {
	svcs, slices := fixtureObjects(false)
	rules := renderRules(t, proxier.ModeIPTables, "worker-1", svcs, slices)
	for _, s := range buildServices(svcs, slices) {
		got := serviceRules(rules, &s)
		if s.Name == "db" && got != nil {
			t.Errorf("headless db has rules: %q", got)
		}
		if s.Name != "db" && got == nil {
			t.Errorf("%s has no rules", s.key())
		}
	}
}

func TestBuildServices(t *testing.T) {
	svcs, slices := fixtureObjects(true)
	got := buildServices(svcs, slices)
	var keys []string
	for _, s := range got {
		keys = append(keys, s.key())
	}
	if strings.Join(keys, " ") != "default/api default/db default/kubernetes default/web" {
		t.Fatalf("services %v, want sorted by namespace and name", keys)
	}
	web := got[3]
	if len(web.Endpoints) != 4 || web.readyEndpoints() != 3 {
		t.Fatalf("web has %d endpoints, %d ready; want 4 and 3", len(web.Endpoints), web.readyEndpoints())
	}
	tq := web.Endpoints[2]
	if tq.Pod != "web-7d9c6b5f4-tq4rj" || tq.Ready || !tq.Terminating || tq.Node != "worker-1" || tq.IP != "10.244.1.3" {
		t.Errorf("the replaced pod reads %+v", tq)
	}
	if got[1].proxied() || !got[3].proxied() {
		t.Errorf("db (headless) proxied %v, web proxied %v", got[1].proxied(), got[3].proxied())
	}
	if firstChoice(got) != "default/api" {
		t.Errorf("first choice %q, want the first Service of default that is not the API server's", firstChoice(got))
	}
}

func TestStableIgnoresCounters(t *testing.T) {
	a := []string{
		"TCP  10.96.23.117:80 rr",
		"  -> 10.244.1.2:8080              Masq    1      0          0         ",
		"    elements = { 10.244.9.9 timeout 3h expires 2h59m58s }",
	}
	b := []string{
		"TCP  10.96.23.117:80 rr",
		"  -> 10.244.1.2:8080              Masq    1      3          12        ",
		"    elements = { 10.244.9.9 timeout 3h expires 2h41m7s }",
	}
	if !slices.Equal(stable(a), stable(b)) {
		t.Errorf("connection counts or expiry times count as a change:\n%q\n%q", stable(a), stable(b))
	}
	c := slices.Clone(a)
	c[1] = "  -> 10.244.1.2:8080              Masq    2      0          0         " // a new weight
	if slices.Equal(stable(a), stable(c)) {
		t.Error("a new weight does not count as a change")
	}
}
