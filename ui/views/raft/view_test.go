package raft

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/ui/internal/uitest"
	"github.com/klab-dev/klab/ui/labstate"
)

func TestRaftViewGolden(t *testing.T) {
	scenarios := []struct {
		name    string
		members int
		state   func(int) *labstate.State
	}{
		{"running", 3, func(n int) *labstate.State { _, st := uitest.Raft(n); return st }},
		{"killed", 3, func(n int) *labstate.State { _, st := uitest.Killed(n); return st }},
		{"five", 5, func(n int) *labstate.State { _, st := uitest.Raft(n); return st }},
	}
	for _, sc := range scenarios {
		for _, lang := range uitest.Langs {
			for _, size := range uitest.Sizes {
				name := fmt.Sprintf("%s-%s-%dx%d", sc.name, lang, size.W, size.H)
				t.Run(name, func(t *testing.T) {
					c := uitest.Setup(t, lang)
					v := New(c, sc.state(sc.members))
					v.SetSize(size.W, size.H)
					got := v.View()
					uitest.CheckFrame(t, got, size.W, size.H)
					uitest.Golden(t, name, got)
				})
			}
		}
	}
}

// TestRaftViewShowsWhatHappened checks the fixture's story reaches the
// screen: the leader and its term, the lagging follower's probe, the
// election's messages and the heartbeats.
func TestRaftViewShowsWhatHappened(t *testing.T) {
	c := uitest.Setup(t, "en")
	_, st := uitest.Raft(3)
	v := New(c, st)
	v.SetSize(120, 40)
	got := v.View()
	for _, want := range []string{
		"★ leader master-1, term 3", "quorum 2 of 3, 3 running",
		"MsgPreVote t3", "MsgVoteResp t3 ✓", "MsgApp t3 i11 +1", "♥ MsgHeartbeat ×8 / Resp ×8",
		"match 8", "probe", "master-1 started an election for term 3",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("view lacks %q:\n%s", want, got)
		}
	}
}

func TestKeysFollowState(t *testing.T) {
	c := uitest.Setup(t, "en")
	_, running := uitest.Raft(3)
	_, killed := uitest.Killed(3)
	paused := func() *labstate.State {
		_, st := uitest.Raft(3)
		for i := range st.Members {
			st.Members[i].Status.Clock.Paused = true
		}
		return st
	}()
	tests := []struct {
		name    string
		st      *labstate.State
		want    []string
		notWant []string
	}{
		{"running", running, []string{"space", "-", "k", "p", "w"}, []string{".", "+", "r", "h"}},
		{"paused", paused, []string{"space", ".", "k"}, []string{"r"}},
		{"leader killed", killed, []string{"r", "p", "w"}, []string{"k"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, b := range New(c, tt.st).ShortHelp() {
				got = append(got, b.Help().Key)
			}
			for _, w := range tt.want {
				if !contains(got, w) {
					t.Errorf("keys %v lack %q", got, w)
				}
			}
			for _, w := range tt.notWant {
				if contains(got, w) {
					t.Errorf("keys %v offer %q, which does not work now", got, w)
				}
			}
		})
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestColourFrameMatchesPlain draws the same state with colours and
// without: once the escape codes are stripped the two frames must be the
// same, cell for cell. The member boxes and the lanes write their styles'
// codes themselves (sgrCache), so this is where a code cut wrong, or a
// border drawn apart from its colour, would show.
func TestColourFrameMatchesPlain(t *testing.T) {
	for _, lang := range uitest.Langs {
		c := uitest.Setup(t, lang)
		_, st := uitest.Busy(5, 200)
		v := New(c, st)
		v.SetSize(200, 60)
		plain := v.View()
		lipgloss.SetColorProfile(termenv.TrueColor)
		coloured := v.View()
		lipgloss.SetColorProfile(termenv.Ascii)
		if coloured == plain {
			t.Fatalf("%s: the TrueColor frame has no escape codes", lang)
		}
		if got := ansi.Strip(coloured); got != plain {
			t.Errorf("%s: the coloured frame differs from the plain one once stripped:\n%s\n---\n%s", lang, got, plain)
		}
		uitest.CheckFrame(t, coloured, 200, 60)
	}
}

// An arrow takes the widest label that fits; when not even the short name
// does, as much of it as fits, never a bare arrow.
func TestArrowLabels(t *testing.T) {
	opts := []string{"MsgReadIndexResp t2", "MsgReadIndexResp", "ReadIndexResp"}
	for _, tt := range []struct {
		width int
		want  string
	}{
		{30, "├──── MsgReadIndexResp t2 ───▶"},
		{20, "├── ReadIndexResp ─▶"},
		{12, "├─ ReadIn… ▶"},
		{7, "├─────▶"},
	} {
		c := newCanvas(tt.width, newSGRCache())
		arrow(c, 0, tt.width, "▶", opts, nil)
		if got := strings.TrimRight(c.String(), " "); got != tt.want {
			t.Errorf("width %d: %q, want %q", tt.width, got, tt.want)
		}
	}
}

// TestFiveMembersInLessonPane draws five members in the room a lesson
// leaves the view at 80×24 (48 columns): the boxes go without padding and
// with short names rather than run off the view.
func TestFiveMembersInLessonPane(t *testing.T) {
	const w, h = 48, 21
	for _, lang := range uitest.Langs {
		t.Run(string(lang), func(t *testing.T) {
			c := uitest.Setup(t, lang)
			_, st := uitest.Raft(5)
			v := New(c, st)
			v.SetSize(w, h)
			got := v.View()
			uitest.CheckFrame(t, got, w, h)
			lines := strings.Split(got, "\n")
			for i := 1; i <= 5; i++ {
				if !strings.Contains(lines[1], fmt.Sprintf("m-%d", i)) {
					t.Errorf("the boxes' top border lacks m-%d: %q", i, lines[1])
				}
			}
			// Every box is whole: five top-right corners on the top row.
			if n := strings.Count(lines[1], "╮"); n != 5 {
				t.Errorf("%d boxes closed on the top row, want 5: %q", n, lines[1])
			}
			uitest.Golden(t, "five-pane-"+string(lang), got)
		})
	}
}

// A key that works now asks the workspace for its action; one that does
// not (step while the clock runs) and every other message ask nothing.
func TestKeysAskForActions(t *testing.T) {
	c := uitest.Setup(t, "en")
	_, st := uitest.Raft(3)
	v := New(c, st)
	tests := []struct {
		key  string
		want Action
	}{
		{"space", Pause}, {"-", Slower}, {"k", Kill}, {"p", Partition}, {"w", Write},
		{".", 0}, {"+", 0}, {"r", 0}, {"h", 0}, {"q", 0},
	}
	for _, tt := range tests {
		var got Action
		if cmd := v.Update(uitest.Key(tt.key)); cmd != nil {
			msg, ok := cmd().(ActionMsg)
			if !ok {
				t.Fatalf("%s: the command's message is %T, want ActionMsg", tt.key, cmd())
			}
			got = msg.Action
		}
		if got != tt.want {
			t.Errorf("%s asks for action %d, want %d", tt.key, got, tt.want)
		}
	}
	for i := range st.Members {
		st.Members[i].Status.Clock.Paused = true
	}
	if msg := v.Update(uitest.Key("space"))(); msg != (ActionMsg{Action: Resume}) {
		t.Errorf("space while paused asks %v, want resume", msg)
	}
	if v.Update(uitest.Key(".")) == nil {
		t.Error("a step while paused asks nothing")
	}
}

// An etcd alarm (NOSPACE after the space quota filled) is the cluster's:
// every member's box names it, whole, in both languages and at every size.
func TestMemberBoxesShowAlarm(t *testing.T) {
	for _, lang := range uitest.Langs {
		for _, size := range uitest.Sizes {
			t.Run(fmt.Sprintf("%s-%dx%d", lang, size.W, size.H), func(t *testing.T) {
				c := uitest.Setup(t, lang)
				_, st := uitest.Raft(3)
				for i := range st.Members {
					st.Members[i].Status.Alarms = []string{"NOSPACE", "NOSPACE"}
				}
				v := New(c, st)
				v.SetSize(size.W, size.H)
				got := v.View()
				uitest.CheckFrame(t, got, size.W, size.H)
				want := map[i18n.Lang]string{i18n.English: "⚠ NOSPACE alarm", i18n.Korean: "⚠ NOSPACE 경보"}[lang]
				if n := strings.Count(got, want); n != 3 {
					t.Errorf("%q appears %d times, want once in each of 3 boxes:\n%s", want, n, got)
				}
			})
		}
	}
}
