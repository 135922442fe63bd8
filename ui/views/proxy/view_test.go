package proxy

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	kubeproxy "github.com/klab-dev/klab/cluster/proxy"
	"github.com/klab-dev/klab/cluster/proxy/proxier"
	"github.com/klab-dev/klab/cluster/proxy/traffic"
	"github.com/klab-dev/klab/ui/internal/uitest"
)

// The golden states are built by handing the view the messages its feeds
// would send, with rules read from testdata/rules: what the real proxier
// prints for the fixture (TestFixtureRules keeps them so).

var fixtureRules = []struct {
	file, mode string
	after      bool
}{
	{"iptables-before", proxier.ModeIPTables, false},
	{"iptables-after", proxier.ModeIPTables, true},
	{"ipvs-after", proxier.ModeIPVS, true},
	{"nftables-after", proxier.ModeNFTables, true},
	{"userspace-after", proxier.ModeUserspace, true},
}

func readRules(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "rules", name+".txt"))
	if err != nil {
		t.Fatalf("%v (run the tests with -update to write it)", err)
	}
	return string(b)
}

// TestFixtureRules keeps the rules the golden states show equal to what
// the proxier prints for the fixture; -update rewrites them.
func TestFixtureRules(t *testing.T) {
	for _, fr := range fixtureRules {
		t.Run(fr.file, func(t *testing.T) {
			svcs, slices := fixtureObjects(fr.after)
			got := renderRules(t, fr.mode, "worker-1", svcs, slices)
			path := filepath.Join("testdata", "rules", fr.file+".txt")
			if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := readRules(t, fr.file); got != want {
				t.Errorf("the proxier prints other %s rules than %s holds (run with -update if that is right):\n%s", fr.mode, path, got)
			}
		})
	}
}

func statusesIn(mode string) []lab.NodeProxy {
	var out []lab.NodeProxy
	for _, n := range fixtureNodes {
		out = append(out, lab.NodeProxy{Node: n.Name, Status: &kubeproxy.Status{Node: n.Name, Mode: mode,
			IPVSScheduler: "rr", Rules: 31, LastSync: kubeproxy.SyncInfo{At: uitest.Now.Add(-3 * time.Second)}}})
	}
	return out
}

// results answers n requests from the fixture's web pods in turn, failing
// every failEvery-th at the connect stage.
func results(mode string, n, failEvery int) []traffic.Result {
	pods := []struct{ name, node string }{
		{"web-7d9c6b5f4-2xkqp", "worker-1"}, {"web-7d9c6b5f4-8mzvn", "worker-2"}, {"web-7d9c6b5f4-w5hcd", "worker-2"},
	}
	var out []traffic.Result
	for i := 1; i <= n; i++ {
		r := traffic.Result{Seq: i, Mode: mode}
		switch {
		case failEvery > 0 && i%failEvery == 0:
			r.Stage, r.Err = traffic.StageConnect, "503 Service Unavailable: dial 10.244.1.3:8080: connection refused"
		default:
			p := pods[(i*7)%len(pods)]
			if i%5 == 0 {
				p = pods[0] // a random mode's wobble
			}
			r.Pod, r.Node = p.name, p.node
		}
		out = append(out, r)
	}
	return out
}

// handBuilt returns the view in one of the golden states.
func handBuilt(t *testing.T, lang i18n.Lang, w, h int, state string) *View {
	t.Helper()
	c := uitest.Setup(t, lang)
	v := NewWith(c, nil)
	v.SetSize(w, h)
	v.Start(context.Background(), fixtureInfo())
	if state == "empty" {
		v.Update(connectedMsg{epoch: v.epoch, cluster: newFake(t)})
		v.Update(servicesMsg{epoch: v.epoch})
		return v
	}
	v.Update(connectedMsg{epoch: v.epoch, cluster: newFake(t)})
	v.Update(servicesMsg{epoch: v.epoch, services: buildServices(fixtureObjects(false))})
	v.Update(subscribedMsg{feed: v.feed})
	v.Update(rulesMsg{feed: v.feed, statuses: statusesIn(proxier.ModeIPTables), rules: readRules(t, "iptables-before")})
	for v.selected != "default/web" {
		v.Update(uitest.Key("down"))
	}
	// web's third pod is replaced.
	v.Update(servicesMsg{epoch: v.epoch, services: buildServices(fixtureObjects(true))})
	v.Update(rulesMsg{feed: v.feed, statuses: statusesIn(proxier.ModeIPTables), rules: readRules(t, "iptables-after")})

	switch state {
	case "diff":
		v.Update(uitest.Key("t"))
		v.Update(trafficMsg{run: v.run, results: results(proxier.ModeIPTables, 100, 25), done: true})
	case "ipvs":
		v.Update(uitest.Key("m"))
		v.Update(switchedMsg{epoch: v.epoch, mode: proxier.ModeIPVS, nodes: statusesIn(proxier.ModeIPVS)})
		v.Update(rulesMsg{feed: v.feed, statuses: statusesIn(proxier.ModeIPVS), rules: readRules(t, "ipvs-after")})
		v.Update(uitest.Key("t"))
		v.Update(trafficMsg{run: v.run, results: results(proxier.ModeIPVS, 40, 0)})
	case "nftables":
		v.Update(rulesMsg{feed: v.feed, statuses: statusesIn(proxier.ModeNFTables), rules: readRules(t, "nftables-after")})
		v.Update(uitest.Key("enter"))
	default:
		t.Fatalf("no state %q", state)
	}
	return v
}

func TestProxyViewGolden(t *testing.T) {
	for _, sc := range []struct {
		state string
		sizes []struct{ W, H int }
	}{
		{"diff", uitest.Sizes},
		{"ipvs", uitest.Sizes[:2]},
		{"nftables", uitest.Sizes[:2]},
		{"empty", uitest.Sizes[:1]},
	} {
		for _, lang := range uitest.Langs {
			for _, size := range sc.sizes {
				name := fmt.Sprintf("%s-%s-%dx%d", sc.state, lang, size.W, size.H)
				t.Run(name, func(t *testing.T) {
					v := handBuilt(t, lang, size.W, size.H, sc.state)
					got := v.View()
					uitest.CheckFrame(t, got, size.W, size.H)
					uitest.Golden(t, name, got)
				})
			}
		}
	}
}

// TestProxyViewShowsTheStory checks the golden states say what happened:
// the replaced pod's endpoint chain leaves the rules and the new one's
// arrives, the chart counts every answer and the failures, and the ipvs
// state shows the virtual servers of web only.
func TestProxyViewShowsTheStory(t *testing.T) {
	v := handBuilt(t, "en", 200, 60, "diff")
	got := v.View()
	for _, want := range []string{
		"default/web · NodePort · ClusterIP 10.96.23.117 · ports 80:30080/TCP→8080",
		"kube-proxy on worker-1 (2/3) · mode iptables · 31 rules, synced 11:59:57",
		"Endpoints: 4, 3 ready", "web-7d9c6b5f4-tq4rj", "terminating",
		"Rules for default/web on worker-1 (iptables-save) · changed at 12:00:00: +",
		"- -A KUBE-SEP-", "DNAT --to-destination 10.244.1.3:8080",
		"+ -A KUBE-SEP-", "DNAT --to-destination 10.244.2.3:8080",
		"unchanged lines",
		"Last 100 requests to default/web via worker-1", "✗ failed (connect)", "handled by iptables ×100",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("view lacks %q:\n%s", want, got)
		}
	}
	for _, notWant := range []string{"10.96.71.4", "default/api", "default/kubernetes"} {
		if strings.Contains(strings.SplitN(got, "Rules for", 2)[1], notWant) {
			t.Errorf("the rules of default/web show %q, which is another Service's:\n%s", notWant, got)
		}
	}
	// The counts add up to the burst.
	b := v.burst
	total := b.failed()
	for _, p := range b.pods {
		total += p.count
	}
	if total != 100 || b.failed() != 4 {
		t.Errorf("chart counts %d answers and %d failures, want 100 and 4", total, b.failed())
	}

	v = handBuilt(t, "en", 200, 60, "ipvs")
	got = v.View()
	for _, want := range []string{
		"mode ipvs, scheduler rr", "Every kube-proxy now runs ipvs (3 of 3 answered)",
		"(ipvsadm -Ln) · changed at 12:00:00: +11 −23", "- ⋯ all 23 old lines removed",
		"+ TCP  10.96.23.117:80 rr", "+ TCP  172.18.0.3:30080 rr", "+   -> 10.244.2.3:8080",
		"Sending 40/100 requests to default/web via worker-1…",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("ipvs view lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "10.96.71.4:8080") {
		t.Errorf("ipvs view shows api's virtual server:\n%s", got)
	}
}

// TestProxyViewFitsEverySize draws every state at sizes between the
// smallest the workspace gives and the largest, around the width where the
// layout changes: each frame must be exactly its size.
func TestProxyViewFitsEverySize(t *testing.T) {
	sizes := []struct{ W, H int }{{40, 10}, {41, 11}, {60, 15}, {79, 23}, {wideWidth - 1, 30}, {wideWidth, 30}, {150, 45}, {200, 60}}
	for _, state := range []string{"diff", "ipvs", "nftables", "empty"} {
		for _, lang := range uitest.Langs {
			for _, size := range sizes {
				t.Run(fmt.Sprintf("%s-%s-%dx%d", state, lang, size.W, size.H), func(t *testing.T) {
					v := handBuilt(t, lang, size.W, size.H, state)
					uitest.CheckFrame(t, v.View(), size.W, size.H)
					for range 3 { // scrolled to the end too
						v.Update(uitest.Key("pgdown"))
					}
					uitest.CheckFrame(t, v.View(), size.W, size.H)
				})
			}
		}
	}
}

// The view owns the messages of its own feeds, stale ones included, and
// nothing else: while it is hidden they cost the workspace no frame.
func TestOwnsItsFeeds(t *testing.T) {
	v := NewWith(uitest.Setup(t, "en"), nil)
	for _, msg := range []tea.Msg{connectedMsg{}, watchingMsg{}, servicesMsg{epoch: 99}, subscribedMsg{}, proxyEventsMsg{},
		streamEndedMsg{}, rulesMsg{feed: 99}, switchedMsg{}, trafficMsg{}} {
		if !v.Owns(msg) {
			t.Errorf("%T is not owned", msg)
		}
	}
	for _, msg := range []tea.Msg{uitest.Key("t"), tea.WindowSizeMsg{}, nil} {
		if v.Owns(msg) {
			t.Errorf("%T is owned", msg)
		}
	}
}
