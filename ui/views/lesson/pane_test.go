package lesson

import (
	"fmt"
	"strings"
	"testing"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/lessons"
	"github.com/klab-dev/klab/ui/internal/uitest"
)

func raftLesson(t *testing.T) *lessons.Lesson {
	t.Helper()
	all, err := lessons.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range all {
		if l.ID == "raft-election" {
			return l
		}
	}
	t.Fatal("no raft-election lesson")
	return nil
}

// TestPaneGolden draws the pane at the widths the workspace gives it at
// 80×24, 120×40 and 200×60, in both languages: a step waiting on its
// check, and the same step passed with a hint shown.
func TestPaneGolden(t *testing.T) {
	for _, lang := range uitest.Langs {
		for _, size := range []struct{ W, H int }{{34, 19}, {48, 35}, {80, 55}} {
			c := uitest.Setup(t, lang)
			l := raftLesson(t)
			p := New(c, l, 2) // kill-leader: has try commands and hints
			p.SetDone(l.Steps[0].ID)
			p.SetDone(l.Steps[1].ID)
			p.SetSize(size.W, size.H)
			frame := p.Render(true)
			uitest.CheckFrame(t, frame, size.W, size.H)
			uitest.Golden(t, fmt.Sprintf("waiting-%s-%dx%d", lang, size.W, size.H), frame)

			if !p.ShowHint() {
				t.Fatal("the step has hints, ShowHint says none")
			}
			p.SetVerdict(lessons.Verdict{Passed: true, Reasons: []i18n.Message{i18n.M("lessons.check.leader-took-over", "master-2", "master-1", 2)}})
			frame = p.Render(false)
			uitest.CheckFrame(t, frame, size.W, size.H)
			uitest.Golden(t, fmt.Sprintf("passed-%s-%dx%d", lang, size.W, size.H), frame)
		}
	}
}

// TestPaneSteps follows a lesson through its steps: hints run out, the
// passed mark stays on a done step, scrolling is clamped.
func TestPaneSteps(t *testing.T) {
	c := uitest.Setup(t, i18n.English)
	l := raftLesson(t)
	p := New(c, l, 0)
	p.SetSize(40, 20)
	p.SetStep(99)
	if !p.Last() || p.Index() != len(l.Steps)-1 {
		t.Fatalf("SetStep(99) shows step %d, want the last", p.Index())
	}
	p.SetStep(2)
	for p.HintsLeft() > 0 {
		p.ShowHint()
	}
	if p.ShowHint() {
		t.Error("ShowHint with no hints left reported one")
	}
	frame := p.Render(true)
	if !strings.Contains(frame, "Hint 1.") {
		t.Errorf("hint not shown, scrolled to the end:\n%s", frame)
	}
	p.SetVerdict(lessons.Verdict{Passed: true})
	if !p.Done(l.Steps[2].ID) {
		t.Error("a passed step is not marked done")
	}
	p.SetStep(3)
	if p.Verdict().Passed {
		t.Error("a new step starts passed")
	}
	p.Scroll(-5)
	p.Scroll(1 << 20)
	frame = p.Render(true)
	uitest.CheckFrame(t, frame, 40, 20)
}
