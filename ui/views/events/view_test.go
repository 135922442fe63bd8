package events

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/apiserver"
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

func TestEventsViewGolden(t *testing.T) {
	for _, name := range []string{"live", "selected", "explain", "filter", "waiting", "unreachable", "not-started"} {
		for _, lang := range uitest.Langs {
			for _, size := range uitest.Sizes {
				if size.W == 200 && name != "live" {
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

func TestEverySizeFits(t *testing.T) {
	for name, fx := range fixtures {
		for _, lang := range uitest.Langs {
			c := uitest.Setup(t, lang)
			for _, w := range []int{40, 60, 79, 80, 81, 100, 120, 160, 200} {
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

// TestEventsViewShows checks that what the cluster reported reaches the
// screen: events with their objects and notes, and requests with verb,
// resource, object, user, code and latency.
func TestEventsViewShows(t *testing.T) {
	c := uitest.Setup(t, i18n.English)
	got := newView(c, 120, 40, fixtures["live"]).View()
	for _, want := range []string{
		"Events", "15 events", "watching every namespace",
		"Warning", "FailedScheduling", "pod/big", "0/6 nodes are available",
		"ScalingReplicaSet", "deployment/web",
		"API requests", "✓ master-1",
		"create", "pods/binding", "default/web-6d4cf56db6-x7k2p", "system:kube-scheduler", "201", "2.7ms",
		"/version", "404", "5.0m",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("view lacks %q:\n%s", want, got)
		}
	}
}

func TestFilterKeys(t *testing.T) {
	c := uitest.Setup(t, i18n.English)
	v := newView(c, 120, 40, live)
	press := func(keys ...string) {
		t.Helper()
		for _, k := range keys {
			if v.Update(uitest.Key(k)) != nil {
				t.Fatalf("%s asked for a command", k)
			}
		}
	}
	press("/", "w", "e", "b", "q", "1")
	if v.filter != "webq1" || !v.editing {
		t.Fatalf("filter %q (editing %v) after typing; keys meant for the workspace must go to the filter", v.filter, v.editing)
	}
	if press("ctrl+c"); v.filter != "webq1" || !v.editing {
		t.Errorf("ctrl+c changed the filter to %q (editing %v); it is not text", v.filter, v.editing)
	}
	press("backspace", "backspace")
	if v.filter != "web" {
		t.Fatalf("filter %q after two backspaces, want web", v.filter)
	}
	press("enter")
	if v.editing || v.filter != "web" {
		t.Fatalf("enter should keep the filter and close the line: %q editing %v", v.filter, v.editing)
	}
	got := v.View()
	if !strings.Contains(got, `filter “web”: 7 of 15`) || strings.Contains(got, "FailedScheduling") || !strings.Contains(got, "ScalingReplicaSet") {
		t.Errorf("the filter does not keep exactly the rows with web:\n%s", got)
	}
	if !strings.Contains(got, `filter “web”: 4 of 11`) {
		t.Errorf("the request pane is not filtered:\n%s", got)
	}
	press("esc")
	if v.filter != "" {
		t.Errorf("esc left the filter %q", v.filter)
	}
	before := v.View()
	if press("esc"); v.View() != before {
		t.Errorf("esc with nothing to close changed the view")
	}
	press("/", "x", "esc")
	if v.filter != "" || v.editing {
		t.Errorf("esc while typing should clear and close: %q editing %v", v.filter, v.editing)
	}
}

func TestSelectAndExplain(t *testing.T) {
	c := uitest.Setup(t, i18n.English)
	v := newView(c, 120, 40, live)
	reason := func() string { return v.current().Reason }
	if reason() != "Rebooted" || v.selected != "" {
		t.Fatalf("at first %s is selected (%q), want the newest, followed", reason(), v.selected)
	}
	for _, k := range []string{"up", "up", "up"} {
		v.Update(uitest.Key(k))
	}
	if reason() != "FailedScheduling" {
		t.Fatalf("three up from the newest selects %s, want FailedScheduling", reason())
	}
	// New events do not move a chosen selection.
	v.apply(eventChanged{Row: ev(0, "Normal", "Pulled", "Pod", "default", "late", "x", "kubelet", "worker-1")})
	if reason() != "FailedScheduling" {
		t.Fatalf("a new event moved the selection to %s", reason())
	}
	v.Update(uitest.Key("enter"))
	got := v.View()
	for _, want := range []string{"What FailedScheduling means", "found no node for the pod",
		"Reported by default-scheduler (default-scheduler-master-1) about Pod default/big.", "Seen 3 times, first at 11:58:40.",
		"Note: 0/6 nodes are available: 3 Insufficient cpu, 3 node(s) had untolerated taint(s)."} {
		if !strings.Contains(got, want) {
			t.Errorf("explanation lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "API requests") {
		t.Errorf("the explanation should take the request pane's place")
	}
	v.Update(uitest.Key("esc"))
	if v.explaining {
		t.Errorf("esc did not close the explanation")
	}
	// Down to the newest follows again.
	for i := 0; i < 10; i++ {
		v.Update(uitest.Key("down"))
	}
	if v.selected != "" || reason() != "Pulled" {
		t.Errorf("at the newest: selected %q (%s), want following", v.selected, reason())
	}
	// PageUp moves a page.
	v.Update(uitest.Key("pgup"))
	if v.selected == "" {
		t.Errorf("pgup did not move the selection")
	}
	// An unknown reason gets the generic explanation.
	v.selected = v.events.rows[v.events.index(v.events.rows[len(v.events.rows)-2].UID)].UID
	v.Update(uitest.Key("enter"))
	if got := v.View(); !strings.Contains(got, "klab has no explanation for Rebooted yet") {
		t.Errorf("no generic explanation for an unknown reason:\n%s", got)
	}
}

func TestKeysFollowState(t *testing.T) {
	c := uitest.Setup(t, i18n.English)
	helpKeys := func(v *View) string {
		var ks []string
		for _, b := range v.ShortHelp() {
			ks = append(ks, b.Help().Key+" "+b.Help().Desc)
		}
		return strings.Join(ks, ", ")
	}
	tests := []struct {
		fixture string
		want    string
	}{
		{"waiting", "/ filter"},
		{"live", "↑ older event, ↓ newer event, enter explain, pgup page up, pgdn page down, / filter"},
		{"explain", "↑ older event, ↓ newer event, enter close, pgup page up, pgdn page down, / filter, esc close"},
		{"filter", "enter keep filter, esc clear filter"},
	}
	for _, tt := range tests {
		if got := helpKeys(newView(c, 80, 24, fixtures[tt.fixture])); got != tt.want {
			t.Errorf("%s: keys %q, want %q", tt.fixture, got, tt.want)
		}
	}
}

// TestEveryReasonExplained: each reason klab's components emit has its
// explanation in both languages.
func TestEveryReasonExplained(t *testing.T) {
	for _, lang := range i18n.Langs {
		for _, r := range explainedReasons {
			if !lang.Has("ui.events.why." + r) {
				t.Errorf("%s has no explanation of %s", lang, r)
			}
		}
	}
}

// TestBuffersBounded: the view keeps the latest events and requests only.
func TestBuffersBounded(t *testing.T) {
	c := uitest.Setup(t, i18n.English)
	v := newView(c, 80, 24, fixtures["waiting"])
	for i := 0; i < maxEvents+50; i++ {
		v.apply(eventChanged{Row: eventRow{UID: fmt.Sprint(i), Time: at(-time.Duration(i) * time.Second), Reason: "Started"}})
		v.apply(requestItem{Row: requestRow{RequestEvent: apiRequestAt(at(-time.Duration(i) * time.Second))}})
	}
	if len(v.events.rows) != maxEvents || v.events.rows[0].UID != "50" {
		t.Errorf("kept %d events from %s, want %d from 50", len(v.events.rows), v.events.rows[0].UID, maxEvents)
	}
	if len(v.requests.rows) != maxRequests {
		t.Errorf("kept %d requests, want %d", len(v.requests.rows), maxRequests)
	}
	// A repeated event updates its row and moves it to its new time.
	r := v.events.rows[0]
	r.Time, r.Count = at(-time.Hour), 2
	v.apply(eventChanged{Row: r})
	if last := v.events.rows[len(v.events.rows)-1]; last.UID != r.UID || last.Count != 2 || len(v.events.rows) != maxEvents {
		t.Errorf("the updated event is not last once: %+v", last)
	}
}

// The type column is whole or gone: "Nor…" said nothing the reason's
// colour does not.
func TestTypeColumnWholeOrGone(t *testing.T) {
	c := uitest.Setup(t, i18n.English)
	for w := 40; w <= 120; w++ {
		got := ansi.Strip(newView(c, w, 24, fixtures["live"]).View())
		if strings.Contains(got, "Nor…") || strings.Contains(got, "Warn…") || strings.Contains(got, "Norma…") {
			t.Fatalf("width %d cuts the event type:\n%s", w, got)
		}
	}
}

// TestRequestAuthorization checks how a request's authorization reads in
// both languages, from the API server's decision and RBAC reason.
func TestRequestAuthorization(t *testing.T) {
	scheduler := `RBAC: allowed by ClusterRoleBinding "system:kube-scheduler" of ClusterRole "system:kube-scheduler" to User "system:kube-scheduler"`
	tests := []struct {
		name, decision, reason string
		lang                   i18n.Lang
		want                   string
	}{
		{"allowed by a binding", apiserver.DecisionAllow, scheduler, i18n.English, "allowed by ClusterRoleBinding/system:kube-scheduler"},
		{"allowed by a binding, ko", apiserver.DecisionAllow, scheduler, i18n.Korean, "허용: ClusterRoleBinding/system:kube-scheduler"},
		{"forbidden, no rule", apiserver.DecisionForbid, "", i18n.English, "forbidden: no rule allows it"},
		{"forbidden, no rule, ko", apiserver.DecisionForbid, "", i18n.Korean, "거부: 허용하는 규칙 없음"},
		{"forbidden, missing role", apiserver.DecisionForbid, `RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found`, i18n.English,
			`forbidden: RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found`},
		{"never authorized", "", "", i18n.English, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			uitest.Setup(t, tt.lang)
			r := requestRow{RequestEvent: apiserver.RequestEvent{Decision: tt.decision, Reason: tt.reason}}
			if got := r.authorization(); got != tt.want {
				t.Errorf("authorization() = %q, want %q", got, tt.want)
			}
		})
	}
	// The filter finds a request by its groups and its decision.
	c := uitest.Setup(t, i18n.English)
	v := newView(c, 200, 60, live)
	for _, k := range []string{"/", "f", "o", "r", "b", "i", "d", "enter"} {
		v.Update(uitest.Key(k))
	}
	if got := v.View(); !strings.Contains(got, "1 of 11") || !strings.Contains(got, "jane") {
		t.Errorf("filtering by “forbid” does not keep the forbidden request alone:\n%s", got)
	}
}
