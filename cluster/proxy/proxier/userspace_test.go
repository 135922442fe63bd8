package proxier

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

func newUserspace(t *testing.T) *Userspace {
	t.Helper()
	m, err := NewUserspace(testConfig(newTestClock()))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestUserspaceConnectRetriesTheNextEndpoint(t *testing.T) {
	m := newUserspace(t)
	m.Sync(webSnapshot(threeEndpoints))
	var tried []string
	var timeouts []time.Duration
	e, err := m.Connect(web, podClient, ViaClusterIP, func(e Endpoint, timeout time.Duration) error {
		tried = append(tried, e.IP.String())
		timeouts = append(timeouts, timeout)
		if len(tried) < 3 {
			return errors.New("connection refused")
		}
		return nil
	})
	if err != nil || e.IP.String() != "10.244.3.5" {
		t.Fatalf("Connect = %v, %v; want 10.244.3.5 after two failures", e, err)
	}
	if got := strings.Join(tried, " "); got != "10.244.1.5 10.244.2.5 10.244.3.5" {
		t.Errorf("tried %s, want each endpoint in turn", got)
	}
	if timeouts[0] != 250*time.Millisecond || timeouts[2] != time.Second {
		t.Errorf("dial timeouts %v, want upstream's 250ms, 500ms, 1s", timeouts)
	}

	attempts := 0
	_, err = m.Connect(web, podClient, ViaClusterIP, func(Endpoint, time.Duration) error {
		attempts++
		return errors.New("connection refused")
	})
	if !errors.Is(err, ErrDialFailed) || attempts != len(EndpointDialTimeouts) {
		t.Errorf("all endpoints dead: %d attempts, error %v; want %d attempts and ErrDialFailed", attempts, err, len(EndpointDialTimeouts))
	}
}

func TestUserspaceRetryIgnoresAffinity(t *testing.T) {
	m := newUserspace(t)
	m.Sync(webSnapshot(threeEndpoints, withAffinity(60)))
	first, err := m.Pick(web, podClient, ViaClusterIP, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The client's endpoint dies: the retry must go elsewhere, and the
	// client then sticks to the endpoint that answered.
	e, err := m.Connect(web, podClient, ViaClusterIP, func(e Endpoint, _ time.Duration) error {
		if e.IP == first.IP {
			return errors.New("connection refused")
		}
		return nil
	})
	if err != nil || e.IP == first.IP {
		t.Fatalf("Connect = %v, %v; want an endpoint other than %s", e, err, first.IP)
	}
	if again, _ := m.Pick(web, podClient, ViaClusterIP, nil); again.IP != e.IP {
		t.Errorf("after the retry the client went to %s, want it pinned to %s", again.IP, e.IP)
	}
}

func TestUserspaceSyncKeepsBalancerAndPorts(t *testing.T) {
	m := newUserspace(t)
	m.Sync(webSnapshot(threeEndpoints))
	port, ok := m.ProxyPort(web)
	if !ok || port != 36000 {
		t.Fatalf("ProxyPort = %d, %v; want 36000", port, ok)
	}
	if got := pickIP(t, m, podClient); got != "10.244.1.5" {
		t.Fatalf("first pick %s", got)
	}
	m.Sync(webSnapshot(threeEndpoints))
	if got := pickIP(t, m, podClient); got != "10.244.2.5" {
		t.Errorf("after an unchanged resync rr went to %s, want 10.244.2.5", got)
	}
	// A new service takes the next free port; web keeps its own.
	m.Sync(BuildSnapshot(testNode,
		[]*corev1.Service{service("default", "web", "10.96.0.10"), service("default", "api", "10.96.0.20")},
		[]*discoveryv1.EndpointSlice{slice("default", "web", threeEndpoints...)}))
	if p, _ := m.ProxyPort(web); p != 36000 {
		t.Errorf("web moved to port %d", p)
	}
	if p, _ := m.ProxyPort(spn("default", "api")); p != 36001 {
		t.Errorf("api got port %d, want 36001", p)
	}
	// Endpoints changed: the balancer starts over.
	m.Sync(webSnapshot(threeEndpoints[1:]))
	if got := pickIP(t, m, podClient); got != "10.244.2.5" {
		t.Errorf("after the endpoints changed rr went to %s, want the first one, 10.244.2.5", got)
	}
}

func TestUserspaceRenderParsesBack(t *testing.T) {
	m := newUserspace(t)
	res := m.Sync(mixedSnapshot())
	var buf bytes.Buffer
	if err := m.Render(&buf); err != nil {
		t.Fatal(err)
	}
	tables, err := parseIPTablesSave(buf.String())
	if err != nil {
		t.Fatalf("portal rules do not parse: %v\n%s", err, buf.String())
	}
	nat := tables["nat"]
	webPort, _ := m.ProxyPort(web)
	var container, host []string
	for _, r := range nat.rules["KUBE-PORTALS-CONTAINER"] {
		if wordAfter(r, "-d") == "10.96.0.10/32" {
			container = append(container, wordAfter(r, "-j")+" "+wordAfter(r, "--to-ports"))
		}
	}
	for _, r := range nat.rules["KUBE-PORTALS-HOST"] {
		if wordAfter(r, "-d") == "10.96.0.10/32" {
			host = append(host, wordAfter(r, "-j")+" "+wordAfter(r, "--to-destination"))
		}
	}
	if got, want := strings.Join(container, ","), "REDIRECT "+strconv.Itoa(webPort); got != want {
		t.Errorf("container portal for web: %q, want %q", got, want)
	}
	if got, want := strings.Join(host, ","), "DNAT 172.18.0.3:"+strconv.Itoa(webPort); got != want {
		t.Errorf("host portal for web: %q, want %q", got, want)
	}
	if n := len(nat.rules["KUBE-NODEPORT-CONTAINER"]); n != 3 {
		t.Errorf("%d NodePort rules, want one per NodePort service (3)", n)
	}
	if got := strings.Count(buf.String(), "\n-A "); got != res.Rules {
		t.Errorf("Sync counted %d rules, the output has %d", res.Rules, got)
	}
}
