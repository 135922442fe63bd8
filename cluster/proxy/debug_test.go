package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// TestDebugEndpoints checks the HTTP surface: healthz, status JSON, rules,
// the event stream with replay, and CONNECT's answers for what is not
// there.
func TestDebugEndpoints(t *testing.T) {
	l := newLab(t, 71)
	b := l.startBackends(1)
	svc := l.createService("web", b, serviceOptions{nodePort: true})
	l.createSlice(l.slice(svc, onNode(b, node)))
	l.setMode(proxier.ModeNFTables, "")
	p := l.startProxy(node)
	waitForReadyEndpoints(t, p, svc, 1)
	base := "http://" + p.Addr()

	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	if resp, body := get("/healthz"); resp.StatusCode != http.StatusOK || body != "ok" {
		t.Errorf("/healthz: %d %q", resp.StatusCode, body)
	}
	resp, body := get("/debug/klab/status")
	var status map[string]any
	if err := json.Unmarshal([]byte(body), &status); err != nil || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("/debug/klab/status: %v %q", err, body)
	}
	for _, key := range []string{"node", "mode", "ipvsScheduler", "configSource", "configError", "modeSince", "servicePorts",
		"endpoints", "rules", "lastSync", "syncs", "minSyncPeriodNs", "syncPeriodNs", "nodePorts", "nodePortErrors", "connections"} {
		if _, ok := status[key]; !ok {
			t.Errorf("status JSON lacks %q: %s", key, body)
		}
	}
	if status["mode"] != "nftables" || status["node"] != node {
		t.Errorf("status JSON %s", body)
	}
	if resp, body := get("/debug/klab/rules"); resp.StatusCode != http.StatusOK ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") || !strings.Contains(body, "table ip kube-proxy") {
		t.Errorf("/debug/klab/rules: %d %q\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}

	// The stream replays what is retained, then follows.
	stream, err := http.Get(base + "/debug/klab/events?since=0")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	dec := json.NewDecoder(stream.Body)
	var first Event
	if err := dec.Decode(&first); err != nil || first.Kind != EventSync || first.Seq != 1 || first.Mode != "nftables" {
		t.Fatalf("first event %+v, %v", first, err)
	}
	l.setMode(proxier.ModeIPTables, "")
	for {
		var e Event
		if err := dec.Decode(&e); err != nil {
			t.Fatal(err)
		}
		if e.Kind == EventModeChanged {
			if e.From != "nftables" || e.To != "iptables" {
				t.Errorf("mode-changed %+v", e)
			}
			break
		}
	}
	// Replay from a sequence number skips what came before it.
	replay, err := http.Get(base + "/debug/klab/events?since=1")
	if err != nil {
		t.Fatal(err)
	}
	var second Event
	err = json.NewDecoder(replay.Body).Decode(&second)
	replay.Body.Close()
	if err != nil || second.Seq != 2 {
		t.Errorf("replay since=1 began with %+v, %v", second, err)
	}

	for _, tc := range []struct {
		name, target, clientIP string
		want                   int
	}{
		{"no such service", "10.96.250.250:80", "", http.StatusNotFound},
		{"not an address", "web.lab:80", "", http.StatusBadRequest},
		{"bad client IP", clusterIPAddr(svc), "pod-7", http.StatusBadRequest},
		{"a NodePort on another address", fmt.Sprintf("10.1.2.3:%d", svc.Spec.Ports[0].NodePort), "", http.StatusNotFound},
		{"through the node's NodePort", l.nodePortAddr(svc), "", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == http.StatusOK && !l.nodePortUsable(t, proxier.ModeIPTables) {
				return
			}
			res, err := getConnect(p, tc.target, tc.clientIP)
			if err != nil {
				t.Fatal(err)
			}
			if res.status != tc.want || res.header.Get(HeaderNode) != node {
				t.Errorf("CONNECT %s: %d %v %q; want %d", tc.target, res.status, res.header, res.body, tc.want)
			}
		})
	}
}
