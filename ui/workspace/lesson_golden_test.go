package workspace

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/lessons"
	"github.com/klab-dev/klab/lessons/live"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/internal/uitest"
	"github.com/klab-dev/klab/ui/keys"
	"github.com/klab-dev/klab/ui/labstate"
	"github.com/klab-dev/klab/ui/views/events"
	"github.com/klab-dev/klab/ui/views/proxy"
	"github.com/klab-dev/klab/ui/views/scheduler"
)

// embeddedLesson returns the embedded lesson id.
func embeddedLesson(t *testing.T, id string) *lessons.Lesson {
	t.Helper()
	all, err := lessons.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range all {
		if l.ID == id {
			return l
		}
	}
	t.Fatalf("no embedded lesson %s", id)
	return nil
}

// memberList prints the fixture's members as etcdctl member list does.
func memberList(info *lab.Info) string {
	var b strings.Builder
	for _, m := range info.Members {
		fmt.Fprintf(&b, "%s, started, %s, %s, %s, false\n", m.ID, m.Name, m.PeerURL, m.ClientURL)
	}
	return b.String()
}

// lessonFixture returns a workspace on the Raft fixture with the
// raft-election lesson open at step 1 and judged as Start would judge
// it: the check begun, then fed the fixture's member statuses through
// the live converter and the klab status the step asks for, so that the
// step passes on master-1's leadership.
// The views with feeds of their own are there, unstarted, as the real
// workspace has them; its commands print the fixture's member list.
func lessonFixture(t *testing.T, lang i18n.Lang, width, height int) *Model {
	t.Helper()
	c := uitest.Setup(t, lang)
	info, st := uitest.Raft(3)
	run := func(_ context.Context, args []string, stdout, _ io.Writer) error {
		if strings.Join(args, " ") != "klab etcdctl --name=demo member list" {
			return fmt.Errorf("unexpected command line %q", args)
		}
		_, err := io.WriteString(stdout, memberList(info))
		return err
	}
	l := embeddedLesson(t, "raft-election")
	// The cluster has the lesson's shape, as the home screen starts it.
	info.Spec.Masters, info.Spec.Workers = l.Cluster.Masters, l.Cluster.Workers
	m := New(c, uitest.NewLab(info, true), st, Options{
		Lesson: l,
		Run:    run,
		Views: map[ViewID]common.View{
			ViewScheduler: scheduler.New(c), ViewProxy: proxy.New(c), ViewEvents: events.New(c),
		},
	})
	m.SetSize(width, height)
	m.beginStep(0)
	judgeStatuses(m, info, st)
	m.judge(lessons.CommandObserved{Args: []string{"klab", "status"}})
	if !m.pane.Verdict().Passed {
		t.Fatalf("step 1 did not pass on the fixture: %+v", m.pane.Verdict())
	}
	return m
}

// judgeStatuses feeds the lesson the members' statuses as the Observer
// reports them.
func judgeStatuses(m *Model, info *lab.Info, st *labstate.State) {
	for i, mem := range st.Members {
		o := &lab.StatusObservation{Observed: lab.Observed{Seq: uint64(20000 + i), Member: mem.Name, At: uitest.Now}, Status: mem.Status}
		for _, lo := range live.Convert(o, info.Members) {
			m.judge(lo)
		}
	}
}

// typeLine types text into the open command line and presses enter,
// running the command it starts. Opening the line is left to the caller
// without its cursor's blink, which would tick for ever.
func typeLine(m *Model, text string) {
	for _, r := range text {
		m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
	_, cmd := m.Update(uitest.Key("enter"))
	uitest.Run(cmd, func(msg tea.Msg) tea.Cmd { _, c := m.Update(msg); return c })
}

// TestLessonGolden draws the workspace with the lesson pane at every size
// in both languages: step 1 of raft-election passed next to the Raft view;
// the same with the command line open after a command that printed and
// one that failed; and step 1's hint shown.
func TestLessonGolden(t *testing.T) {
	states := []struct {
		name  string
		setup func(t *testing.T, m *Model)
		check func(t *testing.T, m *Model, frame string)
	}{
		{name: "step1", check: func(t *testing.T, m *Model, frame string) {
			wantIn(t, frame, i18n.T("ui.lesson.step", 1, 6), "✓ "+i18n.T("ui.lesson.passed"),
				"✓ "+i18n.T("ui.ws.step-passed", m.pane.Step().Title.String()))
		}},
		{name: "cmdline", setup: func(t *testing.T, m *Model) {
			m.Update(uitest.Key(":")) // its command only blinks the cursor
			typeLine(m, "etcdctl member list")
			typeLine(m, "ls /")
			if !m.cmdline.Active() || m.cmdline.Running() {
				t.Fatalf("command line active = %v, running = %v", m.cmdline.Active(), m.cmdline.Running())
			}
		}, check: func(t *testing.T, m *Model, frame string) {
			// The output's long lines wrap, so in a small pane the first
			// command has scrolled away; the last ones are there, whole.
			refusal := strings.Fields(i18n.T("ui.cmd.unknown", "ls"))
			wantIn(t, frame, "1003, started, master-3, http://127.0.0.13:2380", "$ ls /", refusal[0]+" "+refusal[1], i18n.T("ui.cmd.key.run"))
			if strings.Contains(frame, "2379…") {
				t.Error("an output line was cut at the pane's edge, not wrapped")
			}
		}},
		{name: "hint", setup: func(t *testing.T, m *Model) {
			press(m, "i")
			if m.pane.HintsLeft() != 0 {
				t.Fatalf("hints left after i = %d", m.pane.HintsLeft())
			}
		}, check: func(t *testing.T, m *Model, frame string) {
			wantIn(t, frame, i18n.T("ui.lesson.hint", 1))
		}},
	}
	for _, lang := range uitest.Langs {
		for _, size := range uitest.Sizes {
			for _, tt := range states {
				name := fmt.Sprintf("lesson-%s-%s-%dx%d", tt.name, lang, size.W, size.H)
				t.Run(name, func(t *testing.T) {
					m := lessonFixture(t, lang, size.W, size.H)
					*m.c.Keys = *keys.Default() // the key help in lang
					if tt.setup != nil {
						tt.setup(t, m)
					}
					frame := m.View()
					uitest.CheckFrame(t, frame, size.W, size.H)
					tt.check(t, m, frame)
					checkFooter(t, m, frame)
					uitest.Golden(t, name, frame)
				})
			}
		}
	}
}

// wantIn fails unless every piece of text is in the frame. Text longer
// than its pane may be cut, so each is looked for by its first 20
// characters, which fit the narrowest pane.
func wantIn(t *testing.T, frame string, texts ...string) {
	t.Helper()
	for _, text := range texts {
		if r := []rune(text); len(r) > 20 {
			text = string(r[:20])
		}
		if !strings.Contains(frame, text) {
			t.Errorf("frame lacks %q:\n%s", text, frame)
		}
	}
}

// checkFooter fails when the footer offers a key that does nothing in
// the state drawn, or does not offer what the state is for.
func checkFooter(t *testing.T, m *Model, frame string) {
	t.Helper()
	lines := strings.Split(frame, "\n")
	footer := lines[len(lines)-1]
	k := m.c.Keys
	var present, absent []string
	if m.cmdline.Active() {
		present = []string{"enter"}
		absent = []string{k.NextStep.Help().Desc, k.Quit.Help().Desc}
	} else {
		present = []string{k.NextStep.Help().Desc}
		if m.pane.HintsLeft() == 0 {
			absent = append(absent, k.Hint.Help().Desc)
		} else {
			present = append(present, k.Hint.Help().Desc)
		}
		// Step 1 has no step before it.
		absent = append(absent, k.PrevStep.Help().Desc)
	}
	for _, p := range present {
		if !strings.Contains(footer, p) {
			t.Errorf("footer lacks %q: %s", p, footer)
		}
	}
	for _, a := range absent {
		if strings.Contains(footer, a) {
			t.Errorf("footer offers %q, which does nothing now: %s", a, footer)
		}
	}
}

// TestReshapeOffer goes on from a step on three members to one on two: a
// cluster this klab started is offered to be recreated in that shape, one
// started elsewhere is left alone with what to do instead.
func TestReshapeOffer(t *testing.T) {
	l := embeddedLesson(t, "quorum")
	two, at := l.Step("two-members")
	if two == nil || two.Cluster == nil {
		t.Fatal("the quorum lesson has no two-members step with a shape")
	}
	for _, owned := range []bool{true, false} {
		for _, lang := range uitest.Langs {
			t.Run(fmt.Sprintf("owned=%v/%s", owned, lang), func(t *testing.T) {
				c := uitest.Setup(t, lang)
				info, st := uitest.Raft(3)
				info.Spec.Masters, info.Spec.Workers = l.Cluster.Masters, l.Cluster.Workers
				twin := uitest.NewLab(info, owned)
				m := New(c, twin, st, Options{Lesson: l, Step: at - 1})
				m.SetSize(80, 24)
				m.beginStep(at - 1)
				if m.dialog != nil {
					t.Fatalf("step %s runs on the lesson's shape, yet a dialog is open", l.Steps[at-1].ID)
				}
				msgs := press(m, "n")
				if m.dialog == nil || m.dialog.action != "reshape" {
					t.Fatalf("no word of the shape step %s needs", two.ID)
				}
				frame := m.View()
				uitest.CheckFrame(t, frame, 80, 24)
				if !owned {
					// Told where to remove it, and what to run then;
					// enter does nothing.
					uitest.Golden(t, "reshape-elsewhere-"+string(lang), frame)
					if msgs = press(m, "enter"); twin.Closed != nil || m.dialog == nil {
						t.Errorf("enter on a cluster started elsewhere: closed %v, dialog %v", twin.Closed, m.dialog)
					}
					return
				}
				uitest.Golden(t, "reshape-"+string(lang), frame)
				msgs = press(m, "enter")
				if len(twin.Closed) != 1 || !twin.Closed[0] {
					t.Fatalf("closed = %v, want the cluster removed once", twin.Closed)
				}
				var got *ReshapeMsg
				for _, msg := range msgs {
					if r, ok := msg.(ReshapeMsg); ok {
						got = &r
					}
				}
				if got == nil || got.Name != info.Name || got.Lesson != l || got.Step != at || got.Err != nil {
					t.Errorf("after the removal: %+v, want a ReshapeMsg for %s at step %d", got, info.Name, at)
				}
				if quits(msgs) {
					t.Error("recreating the cluster quit klab")
				}
			})
		}
	}
}

// TestProgressNamesTheStepPassed passes a step and goes on before the
// progress is written, as a student pressing n at once does: the step
// recorded done is the one that passed.
func TestProgressNamesTheStepPassed(t *testing.T) {
	c := uitest.Setup(t, i18n.English)
	info, st := uitest.Raft(3)
	l := embeddedLesson(t, "raft-election")
	info.Spec.Masters, info.Spec.Workers = l.Cluster.Masters, l.Cluster.Workers
	p, err := lessons.OpenProgress(filepath.Join(t.TempDir(), lessons.ProgressFile))
	if err != nil {
		t.Fatal(err)
	}
	m := New(c, uitest.NewLab(info, true), st, Options{Lesson: l, Progress: p})
	m.SetSize(120, 40)
	m.beginStep(0)
	save := m.showVerdict(lessons.Verdict{Passed: true})
	if save == nil {
		t.Fatal("a passed step saves nothing")
	}
	m.beginStep(1)
	if msg := save(); msg != nil {
		t.Fatalf("saving: %v", msg)
	}
	if !p.Done(l.ID, l.Steps[0].ID) || p.Done(l.ID, l.Steps[1].ID) {
		t.Errorf("done: %s %v, %s %v; want only the first", l.Steps[0].ID, p.Done(l.ID, l.Steps[0].ID),
			l.Steps[1].ID, p.Done(l.ID, l.Steps[1].ID))
	}
}
