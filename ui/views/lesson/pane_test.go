package lesson

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

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

// framedLesson is a two-step lesson with a frame, instructor notes and a
// prediction, built here so that the tests do not hang on the wording of
// the built-in lessons.
func framedLesson() *lessons.Lesson {
	bi := func(ko, en string) lessons.Bilingual { return lessons.Bilingual{Korean: ko, English: en} }
	return &lessons.Lesson{
		ID: "framed", Title: bi("틀이 있는 레슨", "A framed lesson"),
		Frame: lessons.Frame{
			Objectives:    []lessons.Bilingual{bi("리더가 바뀌는 것을 본다", "Watch the leader change")},
			Prerequisites: []string{"raft-election"},
			Minutes:       10, Level: lessons.LevelBeginner,
			Recap:    bi("리더는 과반수의 표로 뽑힙니다.", "A leader is elected by a majority."),
			ReadNext: []lessons.Link{{Title: bi("Raft 논문 5.2절", "The Raft paper, section 5.2"), URL: "https://raft.github.io/raft.pdf"}},
		},
		Steps: []*lessons.Step{
			{ID: "one", Title: bi("첫 단계", "First"), Body: bi("리더를 죽입니다.", "Kill the leader."), Check: lessons.LeaderChangedCheck{},
				Notes: bi("임기를 가리키세요", "Point at the term"),
				Predict: &lessons.Prediction{Question: bi("누가 리더가 될까요?", "Who becomes leader?"), Choices: []lessons.Choice{
					{Text: bi("먼저 타임아웃된 멤버", "Whoever times out first"), Right: true, Why: bi("선거 타임아웃은 무작위입니다.", "Election timeouts are random.")},
					{Text: bi("master-1", "master-1"), Why: bi("이름 순서는 상관없습니다.", "Names play no part.")},
				}},
				Solution: []lessons.Command{"klab chaos kill leader", "klab status"}},
			{ID: "two", Title: bi("둘째 단계", "Second"), Body: bi("다시 봅니다.", "Look again."), Check: lessons.LeaderChangedCheck{}},
		},
	}
}

// TestPaneFrame shows the frame at the lesson's start and the recap once
// its last step passed, not before.
func TestPaneFrame(t *testing.T) {
	c := uitest.Setup(t, i18n.English)
	l := framedLesson()
	p := New(c, l, 0)
	p.SetSize(60, 40)
	frame := p.Render(true)
	for _, want := range []string{"about 10 minutes · beginner", "Take first: raft-election", "You will be able to:", "Watch the leader change", "Kill the leader."} {
		if !strings.Contains(frame, want) {
			t.Errorf("first step lacks %q:\n%s", want, frame)
		}
	}
	p.SetStep(1)
	frame = p.Render(true)
	if strings.Contains(frame, "Watch the leader change") || strings.Contains(frame, "Recap") {
		t.Errorf("the frame or recap shows on a later step before it passed:\n%s", frame)
	}
	p.SetVerdict(lessons.Verdict{Passed: true})
	frame = p.Render(true)
	for _, want := range []string{"Recap", "A leader is elected by a majority.", "Read next", "https://raft.github.io/raft.pdf"} {
		if !strings.Contains(frame, want) {
			t.Errorf("the last step, passed, lacks %q:\n%s", want, frame)
		}
	}
}

// TestPaneRuntimeText: the cluster tour's nodes step reads as it does on
// the cluster's runtime, in both languages, and names both runtimes when
// the pane does not know which one runs.
func TestPaneRuntimeText(t *testing.T) {
	all, err := lessons.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	var tour *lessons.Lesson
	for _, l := range all {
		if l.ID == "cluster-tour" {
			tour = l
		}
	}
	if tour == nil {
		t.Fatal("no cluster-tour lesson")
	}
	_, step := tour.Step("nodes")
	if step < 0 {
		t.Fatal("cluster-tour has no step nodes")
	}
	for _, tt := range []struct {
		lang       i18n.Lang
		rt         string
		want, lose []string
	}{
		{i18n.English, lessons.RuntimeDocker, []string{"docker://klab"}, []string{"local://klab", ":::", "On the local runtime"}},
		{i18n.English, lessons.RuntimeLocal, []string{"local://klab"}, []string{"docker://klab", ":::", "On the Docker runtime"}},
		{i18n.English, "", []string{"On the Docker runtime:", "docker://klab", "On the local runtime:", "local://klab"}, []string{":::"}},
		{i18n.Korean, lessons.RuntimeDocker, []string{"docker://klab"}, []string{"local://klab", ":::"}},
		{i18n.Korean, lessons.RuntimeLocal, []string{"local://klab"}, []string{"docker://klab", ":::"}},
	} {
		c := uitest.Setup(t, tt.lang)
		p := New(c, tour, step)
		p.SetRuntime(tt.rt)
		p.SetSize(60, 200)
		frame := strings.Join(strings.Fields(ansi.Strip(p.Render(true))), " ")
		for _, w := range tt.want {
			if !strings.Contains(frame, w) {
				t.Errorf("%s on %q lacks %q:\n%s", tt.lang, tt.rt, w, frame)
			}
		}
		for _, l := range tt.lose {
			if strings.Contains(frame, l) {
				t.Errorf("%s on %q shows %q:\n%s", tt.lang, tt.rt, l, frame)
			}
		}
	}
}
