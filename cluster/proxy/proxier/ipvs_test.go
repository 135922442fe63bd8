package proxier

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// newIPVS returns an ipvs mode synced with the web service, scheduled by
// sched.
func newIPVS(t *testing.T, sched string, eps []ep, opts ...serviceOption) *IPVS {
	t.Helper()
	cfg := testConfig(newTestClock())
	cfg.IPVSScheduler = sched
	m, err := NewIPVS(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.Sync(webSnapshot(eps, opts...))
	return m
}

func pickIP(t *testing.T, m Mode, client string) string {
	t.Helper()
	e, err := m.Pick(web, client, ViaClusterIP, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e.IP.String()
}

func TestIPVSLeastConnection(t *testing.T) {
	m := newIPVS(t, SchedulerLeastConnection, threeEndpoints)
	// Open 2 connections to the first endpoint and 1 to the second.
	eps := m.webRealServers()
	m.Connected(web, ViaClusterIP, eps[0])
	m.Connected(web, ViaClusterIP, eps[0])
	m.Connected(web, ViaClusterIP, eps[1])
	if got := pickIP(t, m, podClient); got != "10.244.3.5" {
		t.Errorf("lc picked %s, want the idle 10.244.3.5", got)
	}
	m.Connected(web, ViaClusterIP, eps[2])
	m.Connected(web, ViaClusterIP, eps[2])
	if got := pickIP(t, m, podClient); got != "10.244.2.5" {
		t.Errorf("lc picked %s, want 10.244.2.5 with 1 connection", got)
	}
	m.Disconnected(web, ViaClusterIP, eps[0])
	m.Disconnected(web, ViaClusterIP, eps[0])
	if got := pickIP(t, m, podClient); got != "10.244.1.5" {
		t.Errorf("lc picked %s after the first endpoint's connections closed, want 10.244.1.5", got)
	}
}

func TestIPVSShortestExpectedDelayAndNeverQueue(t *testing.T) {
	for _, sched := range []string{SchedulerShortestExpectedDelay, SchedulerNeverQueue} {
		m := newIPVS(t, sched, threeEndpoints)
		eps := m.webRealServers()
		for i := 0; i < 3; i++ {
			m.Connected(web, ViaClusterIP, eps[0])
		}
		m.Connected(web, ViaClusterIP, eps[1])
		if got := pickIP(t, m, podClient); got != "10.244.3.5" {
			t.Errorf("%s picked %s, want the idle 10.244.3.5", sched, got)
		}
		m.Connected(web, ViaClusterIP, eps[2])
		m.Connected(web, ViaClusterIP, eps[2])
		// Expected delays (active+1)/weight: 4, 2, 3.
		if got := pickIP(t, m, podClient); got != "10.244.2.5" {
			t.Errorf("%s picked %s, want 10.244.2.5 (shortest expected delay)", sched, got)
		}
	}
}

func TestIPVSSourceHashingIsStickyPerClient(t *testing.T) {
	m := newIPVS(t, SchedulerSourceHashing, threeEndpoints)
	reached := map[string]bool{}
	for c := 1; c <= 60; c++ {
		client := fmt.Sprintf("10.244.7.%d", c)
		first := pickIP(t, m, client)
		for i := 0; i < 5; i++ {
			if got := pickIP(t, m, client); got != first {
				t.Fatalf("sh sent client %s to %s then %s", client, first, got)
			}
		}
		reached[first] = true
	}
	if len(reached) != 3 {
		t.Errorf("60 clients reached %v, want all 3 real servers", reached)
	}
}

func TestIPVSDestinationHashingPinsTheService(t *testing.T) {
	// dh hashes the destination, which for a Service is always its virtual
	// address: every client reaches the same real server.
	m := newIPVS(t, SchedulerDestinationHashing, threeEndpoints)
	first := pickIP(t, m, "10.244.7.1")
	for c := 2; c <= 30; c++ {
		if got := pickIP(t, m, fmt.Sprintf("10.244.7.%d", c)); got != first {
			t.Fatalf("dh sent clients to %s and %s, want one server for one virtual address", first, got)
		}
	}
}

func TestIPVSHashMatchesKernel(t *testing.T) {
	// hash_32(1, 8) keeps the top byte of GOLDEN_RATIO_32 (0x61C88647).
	if got := hash32(1, 8); got != 0x61 {
		t.Errorf("hash32(1, 8) = %#x, want 0x61", got)
	}
	if got := hash32(addrValue(mustAddr("0.0.0.2")), 8); got != 0xC3 {
		t.Errorf("hash32(2, 8) = %#x, want 0xc3", got)
	}
}

func TestIPVSKeepsRoundRobinPositionAcrossSync(t *testing.T) {
	m := newIPVS(t, SchedulerRoundRobin, threeEndpoints)
	if got := pickIP(t, m, podClient); got != "10.244.1.5" {
		t.Fatalf("first pick %s", got)
	}
	m.Sync(webSnapshot(threeEndpoints)) // nothing changed
	if got := pickIP(t, m, podClient); got != "10.244.2.5" {
		t.Errorf("after a resync rr restarted at %s, want it to continue with 10.244.2.5", got)
	}
}

func TestIPVSSetScheduler(t *testing.T) {
	m := newIPVS(t, SchedulerRoundRobin, threeEndpoints)
	if err := m.SetScheduler(nn("default", "web"), "wlc2"); err == nil || !strings.Contains(err.Error(), `"wlc2"`) {
		t.Errorf("unknown scheduler: error %v", err)
	}
	if err := m.SetScheduler(nn("default", "web"), SchedulerDestinationHashing); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := m.Render(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "TCP  10.96.0.10:80 dh\n") {
		t.Errorf("after SetScheduler(dh):\n%s", buf.String())
	}
}

func TestIPVSRenderParsesBack(t *testing.T) {
	m, err := NewIPVS(testConfig(newTestClock()))
	if err != nil {
		t.Fatal(err)
	}
	res := m.Sync(mixedSnapshot())
	if err := m.SetScheduler(nn("default", "local"), SchedulerSourceHashing); err != nil {
		t.Fatal(err)
	}
	m.Connected(web, ViaNodePort, Endpoint{IP: mustAddr("10.244.2.5"), Port: 8080})
	var buf bytes.Buffer
	if err := m.Render(&buf); err != nil {
		t.Fatal(err)
	}
	svcs, err := parseIPVSAdm(buf.String())
	if err != nil {
		t.Fatalf("ipvsadm output does not parse: %v\n%s", err, buf.String())
	}
	type row struct {
		sched      string
		persistent int
		reals      string
	}
	got := map[string]row{}
	total := 0
	for _, s := range svcs {
		var reals []string
		for _, r := range s.real {
			if r.forward != "Masq" || r.weight != 1 {
				t.Errorf("%s: real server %+v, want Masq with weight 1", s.addr, r)
			}
			reals = append(reals, fmt.Sprintf("%s/%d", r.addr, r.active))
		}
		got[s.addr] = row{s.scheduler, s.persistent, strings.Join(reals, " ")}
		total += 1 + len(s.real)
	}
	all := "10.244.1.5:8080/0 10.244.2.5:8080/0 10.244.3.5:8080/0"
	want := map[string]row{
		"10.96.0.10:80":    {"rr", 60, all},
		"10.96.0.11:80":    {"sh", 0, all},
		"10.96.0.12:80":    {"rr", 0, ""},
		"10.96.0.13:80":    {"rr", 0, ""}, // internal Local, no local endpoint
		"172.18.0.3:30080": {"rr", 60, "10.244.1.5:8080/0 10.244.2.5:8080/1 10.244.3.5:8080/0"},
		"172.18.0.3:30081": {"sh", 0, "10.244.1.5:8080/0"}, // external Local
		"172.18.0.3:30082": {"rr", 0, ""},
	}
	for addr, w := range want {
		if got[addr] != w {
			t.Errorf("virtual service %s = %+v, want %+v", addr, got[addr], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d virtual services, want %d:\n%s", len(got), len(want), buf.String())
	}
	if total != res.Rules {
		t.Errorf("Sync counted %d, ipvsadm shows %d virtual plus real servers", res.Rules, total)
	}
}

// webRealServers returns the real servers of the web ClusterIP virtual service, for
// tests that report connections to them.
func (m *IPVS) webRealServers() []Endpoint {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Endpoint
	for _, vs := range m.servers {
		if vs.svc == web && vs.via == ViaClusterIP {
			for _, r := range vs.rs {
				out = append(out, r.ep)
			}
		}
	}
	return out
}
