package proxy

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

const node = "worker-1"

// TestTrafficInEveryMode sends requests through a NodePort listener and
// through CONNECT to the ClusterIP in each mode, switching modes through
// the ConfigMap as a student would.
func TestTrafficInEveryMode(t *testing.T) {
	l := newLab(t, 61)
	b := l.startBackends(3)
	svc := l.createService("web", b, serviceOptions{nodePort: true})
	l.createSlice(l.slice(svc, onNode(b, node)))
	p := l.startProxy(node)
	waitForReadyEndpoints(t, p, svc, 3)

	const perPath = 30 // a multiple of 3: round robin is exactly even
	for _, mode := range proxier.ModeNames {
		t.Run(mode, func(t *testing.T) {
			l.setMode(mode, "")
			waitForMode(t, p, mode)

			viaNodePort, viaConnect := newTally(), newTally()
			paths := map[string]*tally{"CONNECT": viaConnect}
			if l.nodePortUsable(t, mode) {
				paths["NodePort"] = viaNodePort
				for range perPath {
					viaNodePort.add(getDirect(l.nodePortAddr(svc)))
				}
			}
			for range perPath {
				res, err := getConnectOK(p, clusterIPAddr(svc), "")
				if err == nil && res.header.Get(HeaderProxyMode) != mode {
					err = fmt.Errorf("%s: %q, want %q", HeaderProxyMode, res.header.Get(HeaderProxyMode), mode)
				}
				viaConnect.add(res.body, err)
			}
			for path, tl := range paths {
				if len(tl.errs) > 0 {
					t.Errorf("%s: %d requests failed, first: %v", path, len(tl.errs), tl.errs[0])
				}
				for _, name := range b.names {
					got := tl.counts[name]
					if got == 0 {
						t.Errorf("%s: %s never reached; counts %v", path, name, tl.counts)
					}
					if (mode == proxier.ModeUserspace || mode == proxier.ModeIPVS) && got != perPath/3 {
						t.Errorf("%s: %s reached %d times; %s round robin over 3 gives exactly %d (counts %v)",
							path, name, got, mode, perPath/3, tl.counts)
					}
				}
			}
		})
	}
	if st := p.Status(); st.Connections.Total < uint64(len(proxier.ModeNames)*perPath) || st.Connections.Failed != 0 {
		t.Errorf("connections = %+v; want at least %d, none failed", st.Connections, len(proxier.ModeNames)*perPath)
	}
}

// TestDeadBackend: an endpoint whose pod is gone but still listed. The
// userspace proxy retries another endpoint, so no request fails; iptables
// sends a third of the connections to the dead one.
func TestDeadBackend(t *testing.T) {
	l := newLab(t, 62)
	b := l.startBackends(3)
	svc := l.createService("web", b, serviceOptions{nodePort: true})
	l.createSlice(l.slice(svc, onNode(b, node)))
	b.kill(1)
	l.setMode(proxier.ModeUserspace, "")
	p := l.startProxy(node)
	waitForReadyEndpoints(t, p, svc, 3)

	const requests = 60
	t.Run("userspace", func(t *testing.T) {
		waitForMode(t, p, proxier.ModeUserspace)
		before := p.Status().Connections
		tl := newTally()
		for range requests {
			tl.add(getDirect(l.nodePortAddr(svc)))
		}
		if len(tl.errs) != 0 {
			t.Errorf("%d of %d requests failed in userspace mode, first: %v", len(tl.errs), requests, tl.errs[0])
		}
		if tl.counts[b.names[1]] != 0 {
			t.Errorf("the dead backend answered: %v", tl.counts)
		}
		after := p.Status().Connections
		if after.Retried-before.Retried == 0 || after.Failed != before.Failed {
			t.Errorf("connections before %+v, after %+v; want retries and no failure", before, after)
		}
	})
	t.Run("iptables", func(t *testing.T) {
		l.setMode(proxier.ModeIPTables, "")
		waitForMode(t, p, proxier.ModeIPTables)
		before := p.Status().Connections
		tl := newTally()
		for range requests {
			tl.addConnect(getConnectOK(p, clusterIPAddr(svc), ""))
		}
		// Each connection has a 1/3 chance of the dead endpoint: no failure
		// in 60 would happen with probability (2/3)^60, about 3e-11.
		if len(tl.errs) == 0 {
			t.Errorf("no request failed in iptables mode with a dead endpoint; counts %v", tl.counts)
		}
		if tl.counts[b.names[0]] == 0 || tl.counts[b.names[2]] == 0 {
			t.Errorf("live backends not both reached: %v", tl.counts)
		}
		after := p.Status().Connections
		if got := after.Failed - before.Failed; got != uint64(len(tl.errs)) {
			t.Errorf("status counts %d failed connections; the client saw %d", got, len(tl.errs))
		}
		// CONNECT says why, naming the endpoint and the mode.
		if l.nodePortUsable(t, proxier.ModeIPTables) {
			nodePortFailures := 0
			for range requests {
				if _, err := getDirect(l.nodePortAddr(svc)); err != nil {
					nodePortFailures++
				}
			}
			if nodePortFailures == 0 {
				t.Errorf("no NodePort connection failed in iptables mode with a dead endpoint")
			}
		}
		for range 30 {
			res, err := getConnect(p, clusterIPAddr(svc), "")
			if err != nil {
				t.Fatal(err)
			}
			if res.status == http.StatusServiceUnavailable {
				if res.header.Get(HeaderEndpoint) != b.addrs[1].String() || !strings.Contains(res.body, "iptables does not retry") {
					t.Errorf("503 with %s %q and body %q", HeaderEndpoint, res.header.Get(HeaderEndpoint), res.body)
				}
				return
			}
		}
		t.Error("30 CONNECTs never reached the dead endpoint")
	})
}

// TestModeSwitchUnderTraffic switches iptables to ipvs while requests
// flow: none fails, the old mode's rules are gone, and the switch is
// announced on the stream and as an Event on the Node.
func TestModeSwitchUnderTraffic(t *testing.T) {
	l := newLab(t, 63)
	b := l.startBackends(3)
	svc := l.createService("web", b, serviceOptions{nodePort: true})
	l.createSlice(l.slice(svc, onNode(b, node)))
	l.setMode(proxier.ModeIPTables, "")
	p := l.startProxy(node)
	waitForReadyEndpoints(t, p, svc, 3)
	if st := p.Status(); st.Mode != proxier.ModeIPTables || st.ConfigSource != configSourceConfigMap {
		t.Fatalf("status %+v; want iptables from the configmap", st)
	}
	var rules strings.Builder
	if err := p.Rules(&rules); err != nil || !strings.Contains(rules.String(), "-A KUBE-SERVICES") {
		t.Fatalf("iptables rules (err %v) lack KUBE-SERVICES:\n%s", err, rules.String())
	}
	oldMode := p.current().mode
	past, _, cancel := p.hub.Subscribe(0)
	cancel()
	since := past[len(past)-1].Seq

	withNodePort := l.nodePortUsable(t, proxier.ModeIPTables)
	stop := make(chan struct{})
	done := make(chan *tally)
	go func() {
		tl := newTally()
		for {
			select {
			case <-stop:
				done <- tl
				return
			default:
			}
			if withNodePort {
				tl.add(getDirect(l.nodePortAddr(svc)))
			}
			tl.addConnect(getConnectOK(p, clusterIPAddr(svc), ""))
		}
	}()
	// Let some traffic through before the switch.
	waitFor(t, p, "traffic before the switch", func() bool { return p.Status().Connections.Total >= 20 })
	l.setMode(proxier.ModeIPVS, "rr")
	waitForMode(t, p, proxier.ModeIPVS)
	target := p.Status().Connections.Total + 20
	waitFor(t, p, "traffic after the switch", func() bool { return p.Status().Connections.Total >= target })
	close(stop)
	tl := <-done
	if len(tl.errs) != 0 {
		t.Errorf("%d requests failed across the switch, first: %v", len(tl.errs), tl.errs[0])
	}
	t.Logf("answers across the switch: %v", tl.counts)

	rules.Reset()
	if err := p.Rules(&rules); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(rules.String(), "-A KUBE-SERVICES") || !strings.Contains(rules.String(), "IP Virtual Server") {
		t.Errorf("rules after the switch to ipvs:\n%s", rules.String())
	}
	rules.Reset()
	if err := oldMode.Render(&rules); err != nil || rules.Len() != 0 {
		t.Errorf("the old iptables mode still holds rules (err %v):\n%s", err, rules.String())
	}

	past, _, cancel = p.hub.Subscribe(since)
	cancel()
	i := slices.IndexFunc(past, func(e Event) bool { return e.Kind == EventModeChanged })
	if i < 0 {
		t.Fatalf("no %s event after seq %d: %+v", EventModeChanged, since, past)
	}
	if e := past[i]; e.From != proxier.ModeIPTables || e.To != proxier.ModeIPVS || e.Rules == 0 {
		t.Errorf("mode-changed event %+v", e)
	}
	ev := l.waitForKubeEvent(node, ReasonModeChanged)
	if ev.Type != corev1.EventTypeNormal || ev.ReportingController != ComponentName || ev.Regarding.UID != "worker-1" ||
		!strings.Contains(ev.Note, "from iptables to ipvs") || !strings.Contains(ev.Note, "restart") {
		t.Errorf("Event %+v", ev)
	}
}

// TestTrafficPolicyLocal: with internalTrafficPolicy Local, ClusterIP
// traffic reaches only this node's endpoints; with externalTrafficPolicy
// Local, so does NodePort traffic from outside the cluster.
func TestTrafficPolicyLocal(t *testing.T) {
	l := newLab(t, 64)
	b := l.startBackends(3)
	eps := []endpoint{{addr: b.addrs[0], node: node}, {addr: b.addrs[1], node: "worker-2"}, {addr: b.addrs[2], node: node}}
	internal := l.createService("internal", b, serviceOptions{internalLocal: true})
	l.createSlice(l.slice(internal, eps))
	external := l.createService("external", b, serviceOptions{nodePort: true, externalLocal: true})
	l.createSlice(l.slice(external, eps))
	p := l.startProxy(node)
	waitForReadyEndpoints(t, p, internal, 3)
	waitForReadyEndpoints(t, p, external, 3)

	for _, mode := range proxier.ModeNames {
		t.Run(mode, func(t *testing.T) {
			l.setMode(mode, "")
			waitForMode(t, p, mode)
			cases := []struct{ name, target, clientIP string }{
				{name: "internal from this node", target: clusterIPAddr(internal)},
				{name: "internal from a pod", target: clusterIPAddr(internal), clientIP: "10.244.1.7"},
			}
			if l.nodePortUsable(t, mode) {
				cases = append(cases, struct{ name, target, clientIP string }{
					name: "external from outside", target: l.nodePortAddr(external), clientIP: "192.168.7.20"})
			}
			for _, tc := range cases {
				tl := newTally()
				for range 30 {
					tl.addConnect(getConnectOK(p, tc.target, tc.clientIP))
				}
				if len(tl.errs) > 0 {
					t.Errorf("%s: %d failed, first %v", tc.name, len(tl.errs), tl.errs[0])
				}
				if tl.counts[b.names[1]] != 0 {
					t.Errorf("%s: reached worker-2's endpoint: %v", tc.name, tl.counts)
				}
				if tl.counts[b.names[0]] == 0 || tl.counts[b.names[2]] == 0 {
					t.Errorf("%s: both local endpoints should answer: %v", tc.name, tl.counts)
				}
			}
		})
	}
}

// TestEndpointNotReady: an endpoint that turns not ready gets no new
// connection once a sync has seen it.
func TestEndpointNotReady(t *testing.T) {
	l := newLab(t, 65)
	b := l.startBackends(3)
	svc := l.createService("web", b, serviceOptions{nodePort: true})
	slice := l.createSlice(l.slice(svc, onNode(b, node)))
	l.setMode(proxier.ModeNFTables, "")
	p := l.startProxy(node)
	waitForReadyEndpoints(t, p, svc, 3)

	slice.Endpoints[1].Conditions.Ready = ptrTo(false)
	slice.Endpoints[1].Conditions.Serving = ptrTo(false)
	l.updateSlice(slice)
	waitForReadyEndpoints(t, p, svc, 2)
	tl := newTally()
	for range 45 {
		tl.addConnect(getConnectOK(p, clusterIPAddr(svc), ""))
	}
	if len(tl.errs) > 0 || tl.counts[b.names[1]] != 0 || tl.counts[b.names[0]] == 0 || tl.counts[b.names[2]] == 0 {
		t.Errorf("after backend-1 turned not ready: counts %v, errors %v", tl.counts, tl.errs)
	}
}

// TestNodePortClosedWithService: deleting the Service closes its NodePort
// listener.
func TestNodePortClosedWithService(t *testing.T) {
	l := newLab(t, 66)
	b := l.startBackends(1)
	svc := l.createService("web", b, serviceOptions{nodePort: true})
	l.createSlice(l.slice(svc, onNode(b, node)))
	l.setMode(proxier.ModeIPVS, "")
	p := l.startProxy(node)
	waitForReadyEndpoints(t, p, svc, 1)
	port := int(svc.Spec.Ports[0].NodePort)
	if st := p.Status(); !slices.Contains(st.NodePorts, port) {
		t.Fatalf("NodePort %d not listening: %+v", port, st)
	}
	if body, err := getDirect(l.nodePortAddr(svc)); err != nil || body != b.names[0] {
		t.Fatalf("through the NodePort: %q, %v", body, err)
	}
	if err := l.cs.CoreV1().Services(l.ns).Delete(context.Background(), svc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, p, "the service gone from the sync", func() bool { return !p.hasService(svc) })
	if st := p.Status(); slices.Contains(st.NodePorts, port) {
		t.Errorf("NodePort %d still listed: %+v", port, st.NodePorts)
	}
	if c, err := dialTCP(l.nodePortAddr(svc)); err == nil {
		c.Close()
		t.Errorf("NodePort %d still accepts connections after the service was deleted", port)
	}
	res, err := getConnect(p, clusterIPAddr(svc), "")
	if err != nil || res.status != http.StatusNotFound {
		t.Errorf("CONNECT to the deleted service: %+v, %v; want 404", res, err)
	}
}
