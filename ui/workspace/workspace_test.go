package workspace

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/internal/uitest"
	"github.com/klab-dev/klab/ui/keys"
	"github.com/klab-dev/klab/ui/kubestate"
	"github.com/klab-dev/klab/ui/labio"
	"github.com/klab-dev/klab/ui/views/events"
)

// fixture returns a workspace on the Raft fixture with a twin lab.
func fixture(t *testing.T, owned bool) (*Model, *uitest.Lab) {
	t.Helper()
	c := uitest.Setup(t, i18n.English)
	info, st := uitest.Raft(3)
	twin := uitest.NewLab(info, owned)
	m := New(c, twin, st, Options{})
	m.SetSize(120, 40)
	return m, twin
}

// press sends keys one by one and runs what they lead to.
func press(m *Model, keys ...string) []tea.Msg {
	var msgs []tea.Msg
	for _, k := range keys {
		_, cmd := m.Update(uitest.Key(k))
		msgs = append(msgs, uitest.Run(cmd, func(msg tea.Msg) tea.Cmd { _, c := m.Update(msg); return c })...)
	}
	return msgs
}

func quits(msgs []tea.Msg) bool {
	return slices.ContainsFunc(msgs, func(m tea.Msg) bool { _, ok := m.(tea.QuitMsg); return ok })
}

func TestRaftKeys(t *testing.T) {
	paused, step, ms := true, 1, 200.0
	tests := []struct {
		name       string
		keys       []string
		wantChaos  []lab.ChaosRequest
		wantClocks int
		check      func(t *testing.T, m *Model, twin *uitest.Lab)
	}{
		{name: "k kills the leader", keys: []string{"k"},
			wantChaos: []lab.ChaosRequest{{Op: lab.OpKill, Targets: []string{"leader"}}},
			check: func(t *testing.T, m *Model, _ *uitest.Lab) {
				if !strings.Contains(m.status.text(), "Killed master-1/etcd, the leader of term 3") {
					t.Errorf("status = %q", m.status.text())
				}
			}},
		{name: "space pauses every member's clock", keys: []string{"space"}, wantClocks: 1,
			check: func(t *testing.T, _ *Model, twin *uitest.Lab) {
				if got := twin.Clocks[0]; got.Paused == nil || *got.Paused != paused || got.Step != 0 {
					t.Errorf("clock request = %+v, want paused", got)
				}
			}},
		{name: "dot does nothing while the clock runs", keys: []string{"."}},
		{name: "minus slows the clock to half speed", keys: []string{"-"}, wantClocks: 1,
			check: func(t *testing.T, _ *Model, twin *uitest.Lab) {
				if got := twin.Clocks[0].TickIntervalMS; got == nil || *got != ms {
					t.Errorf("tick interval = %v, want %v", got, ms)
				}
			}},
		{name: "plus does nothing at full speed", keys: []string{"+"}},
		{name: "p then enter partitions the leader", keys: []string{"p", "enter"},
			wantChaos: []lab.ChaosRequest{{Op: lab.OpPartition, Targets: []string{"master-1"}}},
			check: func(t *testing.T, m *Model, _ *uitest.Lab) {
				if len(m.state.Partitions) != 1 || m.state.Partitions[0].Side[0] != "master-1" {
					t.Errorf("partitions = %+v", m.state.Partitions)
				}
			}},
		{name: "p, down, enter partitions the next member", keys: []string{"p", "down", "enter"},
			wantChaos: []lab.ChaosRequest{{Op: lab.OpPartition, Targets: []string{"master-2"}}}},
		{name: "p then esc does nothing", keys: []string{"p", "esc"}},
		{name: "w writes a key", keys: []string{"w", "w"},
			check: func(t *testing.T, _ *Model, twin *uitest.Lab) {
				if !slices.Equal(twin.Puts, []string{"klab/demo/1", "klab/demo/2"}) {
					t.Errorf("puts = %v", twin.Puts)
				}
			}},
		{name: "r does nothing while every member runs", keys: []string{"r"}},
		{name: "1 shows the overview, where k does nothing", keys: []string{"1", "k"},
			check: func(t *testing.T, m *Model, _ *uitest.Lab) {
				if m.view != ViewOverview {
					t.Errorf("view = %v", m.view)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, twin := fixture(t, true)
			press(m, tt.keys...)
			if !equalRequests(twin.Requests, tt.wantChaos) {
				t.Errorf("chaos requests = %+v, want %+v", twin.Requests, tt.wantChaos)
			}
			if len(twin.Clocks) != tt.wantClocks {
				t.Errorf("clock requests = %d, want %d", len(twin.Clocks), tt.wantClocks)
			}
			if tt.check != nil {
				tt.check(t, m, twin)
			}
		})
	}
	_ = step
}

func equalRequests(a, b []lab.ChaosRequest) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Op != b[i].Op || !slices.Equal(a[i].Targets, b[i].Targets) {
			return false
		}
	}
	return true
}

func TestStepWhilePaused(t *testing.T) {
	m, twin := fixture(t, true)
	for i := range m.state.Members {
		m.state.Members[i].Status.Clock.Paused = true
	}
	press(m, ".", "space")
	if len(twin.Clocks) != 2 || twin.Clocks[0].Step != 1 || twin.Clocks[1].Paused == nil || *twin.Clocks[1].Paused {
		t.Errorf("clock requests = %+v, want a step then a resume", twin.Clocks)
	}
}

func TestRestartAfterKill(t *testing.T) {
	c := uitest.Setup(t, i18n.English)
	info, st := uitest.Killed(3)
	twin := uitest.NewLab(info, true)
	m := New(c, twin, st, Options{})
	m.SetSize(80, 24)
	press(m, "r")
	want := []lab.ChaosRequest{{Op: lab.OpRestart, Targets: []string{"master-1/etcd"}}}
	if !equalRequests(twin.Requests, want) {
		t.Errorf("chaos requests = %+v, want %+v", twin.Requests, want)
	}
}

func TestQuit(t *testing.T) {
	tests := []struct {
		name       string
		owned      bool
		keys       []string
		wantQuit   bool
		wantClosed []bool
	}{
		{"attached quits at once, the cluster keeps running", false, []string{"q"}, true, nil},
		{"owned asks first", true, []string{"q"}, false, nil},
		{"owned, keep", true, []string{"q", "k"}, true, []bool{false}},
		{"owned, remove", true, []string{"q", "r"}, true, []bool{true}},
		{"owned, stay", true, []string{"q", "esc"}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, twin := fixture(t, tt.owned)
			msgs := press(m, tt.keys...)
			if got := quits(msgs); got != tt.wantQuit {
				t.Errorf("quit = %v, want %v", got, tt.wantQuit)
			}
			if !slices.Equal(twin.Closed, tt.wantClosed) {
				t.Errorf("closed = %v, want %v", twin.Closed, tt.wantClosed)
			}
		})
	}
}

func TestQuitDialogGolden(t *testing.T) {
	for _, rt := range []string{lab.RuntimeLocal, lab.RuntimeDocker} {
		for _, lang := range uitest.Langs {
			t.Run(rt+"-"+string(lang), func(t *testing.T) {
				m, _ := fixture(t, true)
				info := *m.info
				info.Runtime = rt
				m.info = &info
				i18n.SetLang(lang)
				*m.c.Keys = *keysDefault()
				press(m, "q")
				got := m.View()
				uitest.CheckFrame(t, got, 120, 40)
				// A Docker cluster's containers outlive this process:
				// keeping it means stopping them, for klab start.
				name := "quit-" + string(lang)
				if rt == lab.RuntimeDocker {
					name = "quit-docker-" + string(lang)
				}
				uitest.Golden(t, name, got)
			})
		}
	}
}

func TestFooterListsOnlyWorkingKeys(t *testing.T) {
	m, _ := fixture(t, true)
	footer := m.Footer(m.ShortHelp())
	for _, absent := range []string{"step", "faster", "restart", "heal"} {
		if strings.Contains(footer, absent) {
			t.Errorf("footer offers %q, which does nothing now: %s", absent, footer)
		}
	}
	m.SetSize(200, 60)
	footer = m.Footer(m.ShortHelp())
	for _, present := range []string{"pause clock", "kill leader", "partition", "write a key", "quit"} {
		if !strings.Contains(footer, present) {
			t.Errorf("footer lacks %q: %s", present, footer)
		}
	}
}

var _ = labio.ActionMsg{}

func keysDefault() *keys.KeyMap { return keys.Default() }

// feedView is a live view whose feed sends feedItems, told when it is
// shown; it offers the keys in offers and counts the keys it is given.
type feedView struct {
	shown  []bool
	offers []key.Binding
	keys   int
}

type feedItem struct{}

func (*feedView) SetSize(int, int)                         {}
func (*feedView) Start(context.Context, *lab.Info) tea.Cmd { return nil }
func (*feedView) Tape(tea.Msg) []byte                      { return nil }
func (*feedView) Replay(*lab.Info)                         {}
func (*feedView) Play([]byte) error                        { return nil }
func (*feedView) Keyframe() []byte                         { return nil }
func (v *feedView) ShortHelp() []key.Binding               { return v.offers }
func (*feedView) FullHelp() [][]key.Binding                { return nil }
func (*feedView) View() string                             { return "events" }
func (v *feedView) Show(shown bool) tea.Cmd                { v.shown = append(v.shown, shown); return nil }
func (*feedView) Owns(msg tea.Msg) bool                    { _, ok := msg.(feedItem); return ok }
func (*feedView) Typing() bool                             { return false }
func (v *feedView) Update(msg tea.Msg) tea.Cmd {
	if _, ok := msg.(tea.KeyMsg); ok {
		v.keys++
	}
	return nil
}

// feedFixture returns a workspace on the Raft fixture whose Events view is
// a feedView.
func feedFixture(t *testing.T) (*Model, *feedView) {
	t.Helper()
	c := uitest.Setup(t, i18n.English)
	info, st := uitest.Raft(3)
	fv := &feedView{}
	m := New(c, uitest.NewLab(info, false), st, Options{Views: map[ViewID]common.View{ViewEvents: fv}})
	m.SetSize(120, 40)
	return m, fv
}

// A view's feed changes nothing on the screen while another view is shown,
// and everything else may. The views are told when they are shown and
// hidden.
func TestUnseen(t *testing.T) {
	m, fv := feedFixture(t)
	if !m.Unseen(feedItem{}) || !m.Unseen(kubestate.UpdateMsg{}) {
		t.Error("the Events feed or the Overview's is seen while the Raft view is shown")
	}
	if m.Unseen(labio.ObservationsMsg{}) || m.Unseen(uitest.Key("x")) {
		t.Error("the Observer's batches and keys must count as seen")
	}
	press(m, "5")
	if m.ViewID() != ViewEvents || m.Unseen(feedItem{}) {
		t.Errorf("view %v: the Events feed is unseen while the Events view is shown", m.ViewID())
	}
	press(m, "2", "1")
	if !slices.Equal(fv.shown, []bool{true, false}) {
		t.Errorf("the Events view was told shown %v; want shown, then hidden", fv.shown)
	}
	if m.Unseen(kubestate.UpdateMsg{}) {
		t.Error("the Overview's feed is unseen while the Overview is shown")
	}
}

// Keys go to the view shown, and only to it; the views' own keys and the
// workspace's stay with the workspace.
func TestKeysGoToTheViewShown(t *testing.T) {
	m, fv := feedFixture(t)
	press(m, "x", "down")
	if fv.keys != 0 {
		t.Errorf("the hidden Events view was given %d keys", fv.keys)
	}
	press(m, "5", "x", "down", "1")
	if fv.keys != 2 || m.ViewID() != ViewOverview {
		t.Errorf("the Events view shown was given %d keys, want 2 (x, down); view %v", fv.keys, m.ViewID())
	}
}

// While the Events view's filter is being typed, every key is text for it,
// the workspace's own (q, the views' numbers, :) and the root's (?, L,
// which the root leaves to a workspace that is typing) included; the
// footer offers only the filter's keys. Once the filter is kept, q quits
// again.
func TestFilterTakesEveryKey(t *testing.T) {
	c := uitest.Setup(t, i18n.English)
	info, st := uitest.Raft(3)
	ev := events.New(c)
	ev.Start(context.Background(), info) // its feeds are not run: they would look for a cluster
	m := New(c, uitest.NewLab(info, true), st, Options{Views: map[ViewID]common.View{ViewEvents: ev}})
	m.SetSize(120, 40)
	press(m, "5", "/")
	if !m.Typing() {
		t.Fatal("the workspace is not typing while the filter is open")
	}
	press(m, "q", "2", ":", "?", "L", "1")
	if m.dialog != nil || m.ViewID() != ViewEvents || m.cmdline.Active() {
		t.Fatalf("a key typed in the filter acted: dialog %v, view %v, command line open %v", m.dialog, m.ViewID(), m.cmdline.Active())
	}
	if got := m.View(); !strings.Contains(got, "q2:?L1") {
		t.Errorf("the filter does not show what was typed:\n%s", got)
	}
	if got := m.Footer(m.ShortHelp()); !strings.Contains(got, "keep filter") || strings.Contains(got, "quit") {
		t.Errorf("the footer while typing offers keys that do not work: %s", got)
	}
	press(m, "enter")
	if m.Typing() {
		t.Fatal("the workspace still types once the filter is kept")
	}
	press(m, "q")
	if m.dialog == nil {
		t.Error("q did not ask to quit once the filter was kept")
	}
}

// esc goes to the view shown when it offers esc (to close an explanation
// or a filter); otherwise it clears the status line.
func TestEscToTheViewThatOffersIt(t *testing.T) {
	m, fv := feedFixture(t)
	press(m, "5")
	m.status = status{msg: i18n.M("ui.done.healed")}
	press(m, "esc")
	if fv.keys != 0 || m.status.text() != "" {
		t.Fatalf("esc offered by no view: the view got %d keys, the status is %q", fv.keys, m.status.text())
	}
	fv.offers = []key.Binding{m.c.Keys.Back}
	m.status = status{msg: i18n.M("ui.done.healed")}
	press(m, "esc")
	if fv.keys != 1 || m.status.text() == "" {
		t.Errorf("esc offered by the view: the view got %d keys, the status is %q", fv.keys, m.status.text())
	}
}
