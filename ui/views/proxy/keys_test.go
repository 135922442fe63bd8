package proxy

import (
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	kubeproxy "github.com/klab-dev/klab/cluster/proxy"
	"github.com/klab-dev/klab/cluster/proxy/proxier"
	"github.com/klab-dev/klab/ui/internal/uitest"
)

// These tests run the view against the in-memory cluster as Bubble Tea
// would, pressing keys and waiting for the messages they lead to.

func TestUpDownSelectsService(t *testing.T) {
	h := start(t, "en", 120, 40, newFake(t))
	v := h.v
	if v.selected != "default/api" {
		t.Fatalf("first selection %q, want default/api", v.selected)
	}
	if !strings.Contains(v.View(), "-d 10.96.71.4 --dport 8080") {
		t.Fatalf("api's rules are not shown:\n%s", v.View())
	}
	for _, k := range []string{"down", "down", "down", "down"} { // the last one stays on the last Service
		h.press(k)
	}
	if v.selected != "default/web" {
		t.Fatalf("selection %q after four downs, want default/web", v.selected)
	}
	got := v.View()
	for _, want := range []string{"▸ default/web", "-d 10.96.23.117 --dport 80", "web-7d9c6b5f4-8mzvn"} {
		if !strings.Contains(got, want) {
			t.Errorf("after selecting web the view lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "10.96.71.4") || v.diff != nil {
		t.Errorf("after selecting web the view still shows api, or a diff:\n%s", got)
	}
	h.press("up")
	if v.selected != "default/kubernetes" {
		t.Errorf("selection %q after up, want default/kubernetes", v.selected)
	}
}

// TestEndpointChangeShowsDiff changes web's endpoints in the cluster: the
// informer's news and the kube-proxy's sync event refetch the rules, and
// the view shows what changed.
func TestEndpointChangeShowsDiff(t *testing.T) {
	f := newFake(t)
	h := start(t, "en", 200, 60, f)
	for h.v.selected != "default/web" {
		h.press("down")
	}
	f.setObjects(fixtureObjects(true))
	// The informer and the event stream race: wait for both.
	h.until("the diff of web's rules and its new endpoints", func() bool {
		return h.v.diff != nil && len(h.v.current().Endpoints) == 4
	})
	got := h.v.View()
	for _, want := range []string{"changed at 12:00:00: +5 −5", "- -A KUBE-SEP-", "+ -A KUBE-SEP-", "Endpoints: 4, 3 ready", "terminating"} {
		if !strings.Contains(got, want) {
			t.Errorf("view lacks %q:\n%s", want, got)
		}
	}
	// enter shows all the rules, and again the changes.
	h.press("enter")
	if !h.v.whole || strings.Contains(h.v.View(), "- -A KUBE-SEP-") {
		t.Errorf("enter did not show the whole rules:\n%s", h.v.View())
	}
	h.press("enter")
	if h.v.whole {
		t.Error("a second enter did not go back to the changes")
	}
}

// TestSyncEventRefetches checks that the rules follow the kube-proxy's
// event stream, not a timer: a sync event alone brings the new rules.
func TestSyncEventRefetches(t *testing.T) {
	f := newFake(t)
	h := start(t, "en", 120, 40, f)
	h.until("no fetch under way", func() bool { return !h.v.fetching })

	// kube-proxy's periodic resync: same mode, same rules, nothing new.
	mark := len(h.handled)
	f.emit(kubeproxy.Event{Kind: kubeproxy.EventSync, Mode: proxier.ModeIPTables, Rules: 20})
	h.until("the idle sync event", func() bool {
		return slices.ContainsFunc(h.handled[mark:], func(m tea.Msg) bool { _, ok := m.(proxyEventsMsg); return ok })
	})
	if h.v.fetching {
		t.Error("a sync that changed nothing fetched the rules")
	}

	f.mu.Lock()
	f.mode = proxier.ModeNFTables // as if the ConfigMap changed behind the view's back
	asked := len(f.rulesAsked)
	f.mu.Unlock()
	f.emit(kubeproxy.Event{Kind: kubeproxy.EventSync, Mode: proxier.ModeNFTables})
	h.until("the nftables rules", func() bool { return h.v.mode() == proxier.ModeNFTables })
	if got := h.v.View(); !strings.Contains(got, "(nft list ruleset)") || !strings.Contains(got, "table ip kube-proxy {") {
		t.Errorf("after the sync event the view shows:\n%s", got)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.rulesAsked) != asked+1 {
		t.Errorf("one sync event fetched the rules %d times", len(f.rulesAsked)-asked)
	}
}

func TestModeKeyCyclesModes(t *testing.T) {
	f := newFake(t)
	h := start(t, "en", 120, 40, f)
	for h.v.selected != "default/web" {
		h.press("down")
	}
	want := []string{proxier.ModeIPVS, proxier.ModeNFTables, proxier.ModeUserspace, proxier.ModeIPTables}
	for i, mode := range want {
		if !h.press("m") {
			t.Fatal("m asked for no switch")
		}
		if !strings.Contains(h.v.View(), "Switching every kube-proxy to "+mode+"…") {
			t.Fatalf("after m the view does not say it is switching to %s:\n%s", mode, h.v.View())
		}
		if hasKey(h.v.ShortHelp(), "m") {
			t.Error("m is offered while a switch runs")
		}
		h.until("the switch to "+mode, func() bool { return h.v.switching == "" && h.v.mode() == mode && h.v.diff != nil })
		got := h.v.View()
		if !strings.Contains(got, "Every kube-proxy now runs "+mode+" (3 of 3 answered)") || !strings.Contains(got, "("+toolOf(mode)+")") {
			t.Errorf("after switching to %s the view shows:\n%s", mode, got)
		}
		f.mu.Lock()
		switches := slices.Clone(f.switches)
		f.mu.Unlock()
		if !slices.Equal(switches, want[:i+1]) {
			t.Errorf("switches %v, want %v", switches, want[:i+1])
		}
	}
}

func TestTrafficKeyStreamsResults(t *testing.T) {
	f := newFake(t)
	f.gate = make(chan struct{})
	f.failEvery = 10
	h := start(t, "en", 200, 60, f)
	for h.v.selected != "default/web" {
		h.press("down")
	}
	if !h.press("t") {
		t.Fatal("t sent no traffic")
	}
	// Half the burst arrives while the rest is held back: the chart shows
	// it before the run ends.
	h.until("the first half of the burst", func() bool { return h.v.burst.received == 50 })
	got := h.v.View()
	if !strings.Contains(got, "Sending 50/100 requests to default/web via worker-1…") || h.v.burst.done {
		t.Errorf("halfway the view shows:\n%s", got)
	}
	if hasKey(h.v.ShortHelp(), "t") {
		t.Error("t is offered while a burst runs")
	}
	close(f.gate)
	h.until("the end of the burst", func() bool { return h.v.burst.done })
	got = h.v.View()
	for _, want := range []string{
		"Last 100 requests to default/web via worker-1",
		"web-7d9c6b5f4-2xkqp", "web-7d9c6b5f4-8mzvn", "web-7d9c6b5f4-tq4rj",
		"✗ failed (connect)", "10   10%", "handled by iptables ×100",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("after the burst the view lacks %q:\n%s", want, got)
		}
	}
	counts := 0
	for _, p := range h.v.burst.pods {
		counts += p.count
	}
	if counts != 90 || h.v.burst.failed() != 10 {
		t.Errorf("%d answers and %d failures, want 90 and 10", counts, h.v.burst.failed())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.sent) != 1 {
		t.Fatalf("%d bursts sent, want 1", len(f.sent))
	}
	if o := f.sent[0]; o.Service != "web" || o.Namespace != "default" || o.Node != "worker-1" || o.Count != 100 || o.Concurrency != 8 {
		t.Errorf("burst sent with %+v", o)
	}
}

func TestNodeKeysFollowAnotherProxy(t *testing.T) {
	f := newFake(t)
	h := start(t, "en", 120, 40, f)
	for h.v.selected != "default/web" {
		h.press("down")
	}
	h.press("right")
	h.until("worker-2's rules", func() bool { return h.v.fetched })
	got := h.v.View()
	if !strings.Contains(got, "kube-proxy on worker-2 (3/3)") || !strings.Contains(got, "TCP  172.18.0.4:30080") && !strings.Contains(got, "--dport 30080") {
		t.Errorf("after right the view shows:\n%s", got)
	}
	h.press("right")
	h.until("master-1's rules", func() bool { return h.v.fetched })
	if h.v.nodeName() != "master-1" {
		t.Errorf("right from the last node went to %s, want master-1", h.v.nodeName())
	}
	h.press("left")
	h.until("worker-2's rules again", func() bool { return h.v.fetched })
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Equal(f.rulesAsked, []string{"worker-1", "worker-2", "master-1", "worker-2"}) {
		t.Errorf("rules asked of %v", f.rulesAsked)
	}
}

func TestPageKeysScrollRules(t *testing.T) {
	h := start(t, "en", 80, 24, newFake(t))
	for h.v.selected != "default/web" {
		h.press("down")
	}
	if !hasKey(h.v.ShortHelp(), "pgdn") {
		t.Fatalf("web's rules overflow 80x24 yet pgdn is not offered: %v", h.v.ShortHelp())
	}
	first := h.v.View()
	h.press("pgdown")
	if h.v.scroll == 0 || h.v.View() == first {
		t.Fatal("pgdown did not scroll")
	}
	for range 20 {
		h.press("pgdown")
	}
	l := h.v.layout()
	if h.v.scroll != len(l.rulesRows)-l.rulesH {
		t.Errorf("scrolled to %d, want the last page at %d", h.v.scroll, len(l.rulesRows)-l.rulesH)
	}
	if !strings.HasSuffix(strings.TrimRight(h.v.View(), " \n"), "COMMIT") {
		t.Errorf("the last page does not end with COMMIT:\n%s", h.v.View())
	}
	for range 20 {
		h.press("pgup")
	}
	if h.v.scroll != 0 || h.v.View() != first {
		t.Error("pgup did not come back to the top")
	}
}

func TestKeysLeaveOthersAlone(t *testing.T) {
	h := start(t, "en", 120, 40, newFake(t))
	for _, k := range []string{"q", "1", "?", "k", "enter"} { // enter: no diff to toggle
		before := h.v.View()
		if h.press(k) || h.v.View() != before {
			t.Errorf("%q changed the view, and it is not the view's key now", k)
		}
	}
}

func hasKey(bs []key.Binding, k string) bool {
	for _, b := range bs {
		if b.Help().Key == k {
			return true
		}
	}
	return false
}

// TestBeforeStart checks the view can be drawn and asked for keys before
// it has a size or a cluster, as the workspace may.
func TestBeforeStart(t *testing.T) {
	v := NewWith(uitest.Setup(t, "en"), nil)
	if v.View() != "" || len(v.ShortHelp()) != 0 {
		t.Errorf("a view without a size draws %q and offers %v", v.View(), v.ShortHelp())
	}
	v.SetSize(80, 24)
	if got := v.View(); !strings.Contains(got, "Connecting to the API server…") {
		t.Errorf("before Start the view shows:\n%s", got)
	}
	for _, k := range []string{"m", "t", "down", "right", "pgdown"} {
		if cmd := v.Update(uitest.Key(k)); cmd != nil {
			t.Errorf("%s before Start returned a command", k)
		}
	}
}
