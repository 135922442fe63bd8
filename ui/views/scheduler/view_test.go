package scheduler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/internal/uitest"
)

func newView(c *common.Common, w, h int, fx fixture) *View {
	v := New(c)
	v.loc = time.UTC
	v.SetSize(w, h)
	fx(v)
	return v
}

func TestSchedulerViewGolden(t *testing.T) {
	for _, name := range []string{"scheduled", "pending", "waiting", "unreachable", "not-started"} {
		for _, lang := range uitest.Langs {
			for _, size := range uitest.Sizes {
				if size.W == 200 && name != "scheduled" {
					continue
				}
				golden := fmt.Sprintf("%s-%s-%dx%d", name, lang, size.W, size.H)
				t.Run(golden, func(t *testing.T) {
					c := uitest.Setup(t, lang)
					got := newView(c, size.W, size.H, fixtures[name]).View()
					uitest.CheckFrame(t, got, size.W, size.H)
					uitest.Golden(t, golden, got)
				})
			}
		}
	}
}

// TestEverySizeFits draws every state at every size from the smallest
// the workspace gives a view, in both languages: no line may be wider
// than the view, and there must be exactly as many lines as it is high.
func TestEverySizeFits(t *testing.T) {
	for name, fx := range fixtures {
		for _, lang := range uitest.Langs {
			c := uitest.Setup(t, lang)
			for _, w := range []int{40, 60, 79, 80, 81, 100, 119, 120, 160, 200} {
				for _, h := range []int{10, 16, 24, 40, 60} {
					got := newView(c, w, h, fx).View()
					uitest.CheckFrame(t, got, w, h)
					if t.Failed() {
						t.Fatalf("%s %s %dx%d:\n%s", name, lang, w, h, got)
					}
				}
			}
		}
	}
}

// TestSchedulerViewShowsTheDecision checks that what the scheduler
// decided reaches the screen: every node's verdict and reason, every
// score, the totals and the chosen node.
func TestSchedulerViewShowsTheDecision(t *testing.T) {
	c := uitest.Setup(t, i18n.English)
	got := newView(c, 120, 40, fixtures["scheduled"]).View()
	for _, want := range []string{
		"leader master-1",
		"▸ default/web-6d4cf56db6-x7k2p",
		"master-1", "node(s) had untolerated taint(s)",
		"3 of 6 evaluated nodes fit",
		"★ worker-2", "0/100/300", "88/88/88", "684",
		"worker-2 has the highest total",
		"bound to worker-2",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("view lacks %q:\n%s", want, got)
		}
	}
	// Narrower, the tables give up detail step by step and say so: at 80
	// columns a line per node and short plugin names; at 60 the score
	// cells hold the weighted score only.
	tests := []struct {
		width int
		want  []string
	}{
		{200, []string{"NodeResourcesBalancedAllocation×1", "InterPodAffinity  WHY"}},
		{80, []string{"TaintToleration: node(s) had untolerated", "Balanced×1", "96/96/96", "A column per plugin from 99 columns wide"}},
		{60, []string{"cell = weighted score", "Balanced×1", "★ worker-2"}},
	}
	for _, tt := range tests {
		got := newView(c, tt.width, 40, fixtures["scheduled"]).View()
		for _, want := range tt.want {
			if !strings.Contains(got, want) {
				t.Errorf("%d-column view lacks %q:\n%s", tt.width, want, got)
			}
		}
	}
}

// TestPendingPodExplained checks that each reason of the FailedScheduling
// message gets its explanation, in both languages.
func TestPendingPodExplained(t *testing.T) {
	tests := []struct {
		lang i18n.Lang
		want []string
	}{
		{i18n.English, []string{"0/6 nodes are available: 3 Insufficient cpu, 3 node(s) had untolerated taint(s).",
			"3 Insufficient cpu", "lack the free CPU", "3 node(s) had untolerated taint(s)", "tolerate", "stays Pending"}},
		{i18n.Korean, []string{"3 Insufficient cpu", "CPU 여유가 없습니다", "톨러레이션", "Pending 상태로"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.lang), func(t *testing.T) {
			c := uitest.Setup(t, tt.lang)
			got := newView(c, 120, 40, fixtures["pending"]).View()
			for _, want := range tt.want {
				if !strings.Contains(got, want) {
					t.Errorf("view lacks %q:\n%s", want, got)
				}
			}
		})
	}
}

func TestKeysChoosePods(t *testing.T) {
	c := uitest.Setup(t, i18n.English)
	v := newView(c, 120, 40, fixtures["scheduled"])
	selected := func() string { return v.pods.list[v.current()].Key }
	if got := selected(); got != "default/web-6d4cf56db6-x7k2p" {
		t.Fatalf("selected %s at first, want the most recent pod", got)
	}
	steps := []struct {
		key  string
		want string
	}{
		{"down", "default/big"},
		{"down", "default/web-6d4cf56db6-9xk2p"},
		{"down", "default/web-6d4cf56db6-9xk2p"}, // the oldest stays
		{"up", "default/big"},
	}
	for _, s := range steps {
		if v.Update(uitest.Key(s.key)) != nil {
			t.Fatalf("%s asked for a command", s.key)
		}
		if got := selected(); got != s.want {
			t.Fatalf("after %s selected %s, want %s", s.key, got, s.want)
		}
	}
	// A pod chosen with the arrows stays chosen when another is decided.
	decide(v, scheduledDecision("web-new", uitest.Now))
	if got := selected(); got != "default/big" {
		t.Fatalf("a new decision moved the selection to %s", got)
	}
	if !strings.Contains(v.View(), "Why the pod waits") {
		t.Errorf("the pending pod's explanation is not shown")
	}
	// Back at the top, the selection follows new pods again.
	v.Update(uitest.Key("up"))
	v.Update(uitest.Key("up"))
	decide(v, scheduledDecision("web-newer", uitest.Now.Add(time.Second)))
	if got := selected(); got != "default/web-newer" {
		t.Fatalf("selected %s, want the newest pod (following)", got)
	}
	before := v.View()
	if v.Update(uitest.Key("k")) != nil || v.View() != before {
		t.Errorf("k changed the view; it belongs to the workspace")
	}
}

func TestKeysFollowState(t *testing.T) {
	c := uitest.Setup(t, i18n.English)
	tests := []struct {
		fixture string
		want    int
	}{{"waiting", 0}, {"not-started", 0}, {"scheduled", 2}}
	for _, tt := range tests {
		v := newView(c, 80, 24, fixtures[tt.fixture])
		if got := len(v.ShortHelp()); got != tt.want {
			t.Errorf("%s: %d keys, want %d", tt.fixture, got, tt.want)
		}
	}
	one := newView(c, 80, 24, fixtures["waiting"])
	decide(one, pendingDecision(uitest.Now))
	one.Update(uitest.Key("down"))
	if one.current() != 0 {
		t.Errorf("down with one pod selected pod %d", one.current())
	}
}

// TestOlderAttemptIgnored: a scheduler that took over replays an older
// attempt of a pod after a newer one arrived; the newer one stays.
func TestOlderAttemptIgnored(t *testing.T) {
	c := uitest.Setup(t, i18n.English)
	v := newView(c, 80, 24, fixtures["waiting"])
	newer := pendingDecision(uitest.Now)
	older := pendingDecision(uitest.Now.Add(-time.Minute))
	older.Attempt = 1
	decide(v, newer)
	decide(v, older)
	if got := v.pods.list[0].Decision.Attempt; got != 3 || len(v.pods.list) != 1 {
		t.Errorf("attempt %d of %d pods kept, want attempt 3 of 1", got, len(v.pods.list))
	}
}
