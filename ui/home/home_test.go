package home

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/lessons"
	"github.com/klab-dev/klab/ui/internal/uitest"
	"github.com/klab-dev/klab/ui/labio"
)

func newHome(t *testing.T, lang i18n.Lang, w, h int) *Model {
	t.Helper()
	c := uitest.Setup(t, lang)
	spec := lab.DefaultSpec()
	spec.Name = "demo"
	m := New(c, context.Background(), spec, slog.New(slog.DiscardHandler), Options{})
	m.SetSize(w, h)
	return m
}

func press(m *Model, keys ...string) tea.Cmd {
	var cmd tea.Cmd
	for _, k := range keys {
		m, cmd = m.Update(uitest.Key(k))
	}
	return cmd
}

func TestHomeGolden(t *testing.T) {
	running := labio.RunningMsg{Clusters: []labio.Running{{Name: "d1", Masters: 3, Runtime: "docker", Containers: 23}, {Name: "t1", Masters: 3, Runtime: "local", PID: 4242}}}
	steps := []lab.StepEvent{
		{Title: i18n.M("up.step.nodes", 3, "local"), Phase: lab.StepDone, Elapsed: 2 * time.Millisecond},
		{Title: i18n.M("up.step.etcd", 3), Phase: lab.StepDone, Elapsed: 31 * time.Millisecond},
		{Title: i18n.M("up.step.leader"), Phase: lab.StepStarted},
	}
	scenarios := []struct {
		name  string
		setup func(m *Model)
	}{
		{"form", func(m *Model) { m.Update(running) }},
		{"masters", func(m *Model) { m.Update(running); press(m, "up", "up", "up", "up", "up") }},
		{"steps", func(m *Model) {
			m.starting = &labio.Starting{}
			for _, s := range steps {
				m.addStep(s)
			}
		}},
		{"failed", func(m *Model) {
			m.addStep(lab.StepEvent{Title: i18n.M("up.step.nodes", 3, "local"), Phase: lab.StepFailed, Elapsed: time.Millisecond})
			m.Update(labio.FailedMsg{Err: lab.ErrDockerUnavailable})
		}},
	}
	for _, sc := range scenarios {
		for _, lang := range uitest.Langs {
			for _, size := range uitest.Sizes[:2] {
				name := fmt.Sprintf("%s-%s-%dx%d", sc.name, lang, size.W, size.H)
				t.Run(name, func(t *testing.T) {
					m := newHome(t, lang, size.W, size.H)
					sc.setup(m)
					got := m.View()
					uitest.CheckFrame(t, got, size.W, size.H)
					uitest.Golden(t, name, got)
				})
			}
		}
	}
}

func TestHomeKeys(t *testing.T) {
	tests := []struct {
		name  string
		keys  []string
		check func(t *testing.T, m *Model, cmd tea.Cmd)
	}{
		{"masters cycle 3 → 5 → 1", []string{"up", "up", "up", "up", "up", "right", "right"}, func(t *testing.T, m *Model, _ tea.Cmd) {
			if m.spec.Masters != 1 {
				t.Errorf("masters = %d, want 1", m.spec.Masters)
			}
		}},
		{"runtime docker can be chosen", []string{"up", "up", "right", "right"}, func(t *testing.T, m *Model, _ tea.Cmd) {
			if m.spec.Runtime != lab.RuntimeDocker || m.err != nil {
				t.Errorf("runtime %s, err %v", m.spec.Runtime, m.err)
			}
		}},
		{"the name takes only what a name may hold", []string{"up", "backspace", "X", "q", "7"}, func(t *testing.T, m *Model, _ tea.Cmd) {
			if got := m.Spec().Name; got != "demq7" {
				t.Errorf("name = %q, want demq7", got)
			}
			if m.QuitAllowed() {
				t.Errorf("q quits while typing a name")
			}
		}},
		{"a bad name is refused before anything starts", []string{"up", "backspace", "backspace", "backspace", "backspace", "down", "enter"}, func(t *testing.T, m *Model, _ tea.Cmd) {
			if m.err == nil || m.starting != nil {
				t.Errorf("err %v, starting %v", m.err, m.starting)
			}
		}},
		{"language asks the root to switch", []string{"up", "up", "up", "up", "up", "up", "right"}, func(t *testing.T, _ *Model, cmd tea.Cmd) {
			if cmd == nil {
				t.Fatal("no command")
			}
			if msg, ok := cmd().(LangMsg); !ok || msg.Lang != i18n.Korean {
				t.Errorf("msg = %#v, want LangMsg{ko}", msg)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newHome(t, i18n.English, 80, 24)
			var cmd tea.Cmd
			for _, k := range tt.keys {
				msg := uitest.Key(k)
				if k == "backspace" {
					msg = tea.KeyMsg{Type: tea.KeyBackspace}
				}
				m, cmd = m.Update(msg)
			}
			tt.check(t, m, cmd)
		})
	}
}

// lessonHome is a home screen listing the embedded lessons, with some
// progress saved.
func lessonHome(t *testing.T, lang i18n.Lang, w, h int) *Model {
	t.Helper()
	c := uitest.Setup(t, lang)
	ls, err := lessons.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	p, err := lessons.OpenProgress(filepath.Join(t.TempDir(), lessons.ProgressFile))
	if err != nil {
		t.Fatal(err)
	}
	tour := ls[0]
	for _, st := range tour.Steps {
		if err := p.Complete(tour.ID, st.ID); err != nil {
			t.Fatal(err)
		}
	}
	spec := lab.DefaultSpec()
	spec.Name = "demo"
	m := New(c, context.Background(), spec, slog.New(slog.DiscardHandler), Options{Lessons: ls, Progress: p})
	m.SetSize(w, h)
	m.Update(labio.DockerMsg{Version: "28.2.2"})
	return m
}

func TestHomeLessonsGolden(t *testing.T) {
	for _, lang := range uitest.Langs {
		for _, size := range uitest.Sizes {
			name := fmt.Sprintf("lessons-%s-%dx%d", lang, size.W, size.H)
			m := lessonHome(t, lang, size.W, size.H)
			got := m.View()
			uitest.CheckFrame(t, got, size.W, size.H)
			uitest.Golden(t, name, got)
		}
	}
}

// TestHomeLessonChoice: the cursor opens on the first lesson not done;
// enter on a lesson starts its cluster in the lesson's shape; free play
// leaves the shape to the form.
func TestHomeLessonChoice(t *testing.T) {
	m := lessonHome(t, i18n.English, 120, 40)
	if r := m.at(); r.kind != rowLesson || m.lessons[r.index-1].ID != "api-server" {
		t.Fatalf("cursor on %+v, want the first unfinished lesson", r)
	}
	press(m, "down", "down")
	if r := m.at(); m.lessons[r.index-1].ID != "quorum" && m.lessons[r.index-1].ID != "raft-election" {
		t.Fatalf("cursor on %+v", r)
	}
	l := m.lessons[m.at().index-1]
	// Starting needs a runtime; cancel it at once, only the choice matters.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m.ctx = ctx
	press(m, "enter")
	if got, step := m.Lesson(); got != l || step != 0 {
		t.Errorf("chose %v at step %d, want %s at 0", got, step, l.ID)
	}
	if m.spec.Masters != l.Cluster.Masters || m.spec.Workers != l.Cluster.Workers {
		t.Errorf("shape %d+%d, want the lesson's %d+%d", m.spec.Masters, m.spec.Workers, l.Cluster.Masters, l.Cluster.Workers)
	}
	if m.InProgress() == nil {
		t.Fatal("enter on a lesson did not start its cluster")
	}
	m.InProgress().Abort()

	m = lessonHome(t, i18n.English, 120, 40)
	m.cursor = m.rowIndex(row{rowLesson, 0})
	press(m, "enter")
	if got, _ := m.Lesson(); got != nil || m.at().kind != rowMasters || m.Starting() {
		t.Errorf("free play: lesson %v, cursor %+v, starting %v", got, m.at(), m.Starting())
	}
}

// TestHomeLessonStepShape opens lessons at a step, as klab --lesson id/step
// and the progress saved do: the cluster gets the shape of that step.
func TestHomeLessonStepShape(t *testing.T) {
	m := lessonHome(t, i18n.English, 120, 40)
	var quorum *lessons.Lesson
	for _, l := range m.lessons {
		if l.ID == "quorum" {
			quorum = l
		}
	}
	if quorum == nil {
		t.Fatal("no quorum lesson")
	}
	_, two := quorum.Step("two-members")
	_, five := quorum.Step("five-members")
	for _, tt := range []struct {
		step    int
		masters int
	}{{0, 3}, {two, 2}, {five, 5}, {len(quorum.Steps) - 1, 5}} {
		m.chooseStep(quorum, tt.step)
		if m.Spec().Masters != tt.masters || m.Spec().Workers != 1 {
			t.Errorf("step %d: shape %d+%d, want %d+1", tt.step, m.Spec().Masters, m.Spec().Workers, tt.masters)
		}
	}
	// Progress saved on the two-member step opens the lesson there, on
	// two masters.
	if err := m.progress.SetCurrent(quorum.ID, "two-members"); err != nil {
		t.Fatal(err)
	}
	m.choose(quorum)
	if _, step := m.Lesson(); step != two || m.Spec().Masters != 2 {
		t.Errorf("progress at two-members: step %d on %d masters, want %d on 2", step, m.Spec().Masters, two)
	}
}

// TestHomeScrollsLessons: with more lessons than an 80×24 terminal holds,
// the lesson list scrolls with the cursor, says how many rows are above
// and below, and the settings and the start action stay on the screen.
func TestHomeScrollsLessons(t *testing.T) {
	for _, lang := range uitest.Langs {
		c := uitest.Setup(t, lang)
		ls, err := lessons.Embedded()
		if err != nil {
			t.Fatal(err)
		}
		// Fifteen lessons: the embedded ones and copies under other ids.
		var many []*lessons.Lesson
		for i := 0; len(many) < 15; i++ {
			l := *ls[i%len(ls)]
			l.ID = fmt.Sprintf("%s-%d", l.ID, i)
			l.Title = lessons.Bilingual{Korean: fmt.Sprintf("레슨 %02d", i), English: fmt.Sprintf("Lesson %02d", i)}
			many = append(many, &l)
		}
		spec := lab.DefaultSpec()
		spec.Name = "demo"
		m := New(c, context.Background(), spec, slog.New(slog.DiscardHandler), Options{Lessons: many})
		m.SetSize(80, 24)
		m.Update(labio.DockerMsg{Version: "28.2.2"})
		start := i18n.T("ui.home.start", spec.Name, spec.Masters)
		for i := range many {
			frame := ansi.Strip(m.View())
			uitest.CheckFrame(t, m.View(), 80, 24)
			if r := m.at(); r.kind == rowLesson && r.index > 0 {
				title := many[r.index-1].Title.String()
				if !strings.Contains(frame, "▸   "+title) {
					t.Fatalf("%s: lesson %d focused but not shown:\n%s", lang, i, frame)
				}
			}
			for _, want := range []string{start, i18n.T("ui.home.masters"), i18n.T("ui.home.runtime")} {
				if !strings.Contains(frame, want) {
					t.Fatalf("%s: %q is off the screen with lesson %d focused:\n%s", lang, want, i, frame)
				}
			}
			if i == 0 && !strings.Contains(frame, "↓ ") {
				t.Errorf("%s: no rows-below note at the top of the list:\n%s", lang, frame)
			}
			press(m, "down")
		}
		if frame := ansi.Strip(m.View()); !strings.Contains(frame, "↑ ") {
			t.Errorf("%s: no rows-above note at the end of the list:\n%s", lang, frame)
		}
	}
}

// TestHomePackProblems: a lesson pack that did not load is named on the
// home screen with its first problems at their file and line, and how
// many more there are, in both languages and on a small screen.
func TestHomePackProblems(t *testing.T) {
	for _, lang := range uitest.Langs {
		c := uitest.Setup(t, lang)
		ls, err := lessons.Embedded()
		if err != nil {
			t.Fatal(err)
		}
		var problems []*lessons.LoadError
		for i := range 6 {
			problems = append(problems, &lessons.LoadError{File: "pack/a.yaml", Line: 10 + i, Column: 3, Path: "title", Msg: i18n.M("lessons.err.missing-ko")})
		}
		spec := lab.DefaultSpec()
		m := New(c, context.Background(), spec, slog.New(slog.DiscardHandler), Options{Lessons: ls, Pack: "pack", Problems: problems})
		m.SetSize(80, 24)
		m.Update(labio.DockerMsg{Version: "28.2.2"})
		frame := ansi.Strip(m.View())
		uitest.CheckFrame(t, m.View(), 80, 24)
		for _, want := range []string{i18n.T("ui.home.pack-problems", "pack", 6), "pack/a.yaml:10:3: title", "pack/a.yaml:13:3", i18n.T("ui.home.pack-more", 2, "pack")} {
			if !strings.Contains(frame, want) {
				t.Errorf("%s: no %q on the home screen:\n%s", lang, want, frame)
			}
		}
		if strings.Contains(frame, "pack/a.yaml:14") {
			t.Errorf("%s: more than %d problems listed:\n%s", lang, maxProblemLines, frame)
		}
	}
}
