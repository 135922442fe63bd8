package workspace

import (
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/lessons"
	"github.com/klab-dev/klab/ui/views/lesson"
)

// feedMsg carries what the lesson feed observed since the last one.
// from is the feed that sent it: a reset replaces the feed, and a batch
// of the old one is dropped.
type feedMsg struct {
	batch []lessons.Observation
	from  LessonFeed
}

// feedClosedMsg says the lesson feed ended.
type feedClosedMsg struct{}

// waitFeed waits for the lesson feed's next batch.
func waitFeed(f LessonFeed) tea.Cmd {
	if f == nil {
		return nil
	}
	ch := f.Observations()
	return func() tea.Msg {
		batch, ok := <-ch
		if !ok {
			return feedClosedMsg{}
		}
		return feedMsg{batch: batch, from: f}
	}
}

// judge feeds one observation to the lesson's Evaluator and shows the
// verdict when it changed. A step passed is saved.
func (m *Model) judge(o lessons.Observation) tea.Cmd {
	if m.eval == nil {
		return nil
	}
	v, changed := m.eval.Observe(o)
	if !changed {
		return nil
	}
	return m.showVerdict(v)
}

func (m *Model) showVerdict(v lessons.Verdict) tea.Cmd {
	m.pane.SetVerdict(v)
	if !v.Passed {
		return nil
	}
	m.status = status{msg: i18n.M("ui.ws.step-passed", m.pane.Step().Title)}
	if m.pane.Last() {
		m.status = status{msg: i18n.M("ui.lesson.complete", m.pane.Lesson().Title)}
	}
	// The step is named now: the write runs later, on another goroutine,
	// when the student may already have gone on to the next step.
	id, step := m.pane.Lesson().ID, m.pane.Step().ID
	return tea.Batch(m.saveProgress(func(p *lessons.Progress) error { return p.Complete(id, step) }), m.autoVerdict())
}

// saveProgress writes progress in a command: it is a file write.
func (m *Model) saveProgress(f func(p *lessons.Progress) error) tea.Cmd {
	p := m.opts.Progress
	if p == nil {
		return nil
	}
	return func() tea.Msg {
		if err := f(p); err != nil {
			return progressErrMsg{err: err}
		}
		return nil
	}
}

// publishPosition records the step shown in the cluster's state dir, for
// klab notes in another terminal. A position that cannot be written costs
// the notes only, not the lesson: it is logged nowhere and not shown.
func (m *Model) publishPosition(lesson, step string) tea.Cmd {
	if m.info == nil {
		return nil
	}
	now := time.Now()
	if m.lessonStarted.IsZero() {
		m.lessonStarted = now
	}
	name, pos := m.info.Name, lab.LessonPosition{Lesson: lesson, Step: step, Started: m.lessonStarted, StepStarted: now}
	return func() tea.Msg {
		lab.WriteLessonPosition(name, pos)
		return nil
	}
}

// progressErrMsg says progress could not be saved.
type progressErrMsg struct{ err error }

// beginStep shows step i, shows its view, starts judging its check and
// has the feed follow what the checks of the steps on this cluster read,
// so that a command typed in another terminal counts as one typed here.
func (m *Model) beginStep(i int) tea.Cmd {
	m.pane.SetStep(i)
	st := m.pane.Step()
	m.view = viewOf(st.View, m.view)
	var cmds []tea.Cmd
	if m.feed != nil {
		m.feed.Follow(m.pane.Lesson().SegmentNeeds(i))
	}
	v := m.eval.Begin(st.Check)
	if v.Passed {
		cmds = append(cmds, m.showVerdict(v))
	} else {
		m.pane.SetVerdict(v)
	}
	id, step := m.pane.Lesson().ID, st.ID
	cmds = append(cmds, m.saveProgress(func(p *lessons.Progress) error { return p.SetCurrent(id, step) }))
	cmds = append(cmds, m.publishPosition(id, step), m.stepSnapshot(id, step))
	// A question comes before the act: asked at once, unless answered
	// before (it can be changed with a until the step passes). Autoplay
	// leaves it to the room, in the pane.
	if m.pane.Asking() && !m.Autoplaying() {
		m.dialog = m.predictDialog()
	}
	if m.auto.on {
		m.auto.phase = autoBegin
		if !m.auto.paused {
			cmds = append(cmds, m.autoStep())
		}
	}
	// A step that runs on another shape (going on to it, or back from
	// it) offers to recreate a cluster this klab started; one started
	// elsewhere is its owner's to remove.
	if shape := m.pane.Lesson().ShapeAt(i); !m.fits(shape) {
		elsewhere := m.lab == nil || !m.lab.Owned()
		m.dialog = reshapeDialog(shape, elsewhere, id+"/"+step)
		m.status = status{err: i18n.NewError("ui.ws.needs-shape", shape.Masters, shape.Workers)}
		if elsewhere {
			m.status = status{err: i18n.NewError("ui.ws.needs-shape-attached", shape.Masters, shape.Workers, id+"/"+step)}
		}
	}
	m.layout()
	return tea.Batch(cmds...)
}

// predictDialog asks the step's question; the cursor starts on the
// answer given before, if any.
func (m *Model) predictDialog() *dialog {
	st := m.pane.Step()
	var options []string
	for i, c := range st.Predict.Choices {
		options = append(options, lesson.ChoiceLabel(i)+" "+c.Text.String())
	}
	cursor, _ := m.pane.Answer(st.ID)
	d := chooser("", "predict", options, cursor)
	d.question = st.Predict.Question
	return d
}

// answer records the choice predicted at the step shown.
func (m *Model) answer(choice int) tea.Cmd {
	st := m.pane.Step()
	m.pane.SetAnswer(st.ID, choice)
	m.status = status{msg: i18n.M("ui.lesson.answered", lesson.ChoiceLabel(choice))}
	id, step := m.pane.Lesson().ID, st.ID
	return m.saveProgress(func(p *lessons.Progress) error { return p.SetAnswer(id, step, choice) })
}

// fits reports whether the cluster shown has the shape a step needs.
func (m *Model) fits(s lessons.Shape) bool {
	if m.info == nil {
		return true
	}
	return m.info.Spec.Masters == s.Masters && m.info.Spec.Workers == s.Workers
}

// lessonKey handles the lesson pane's keys; ok is false for others.
func (m *Model) lessonKey(msg tea.KeyMsg) (tea.Cmd, bool) {
	if m.pane == nil {
		return nil, false
	}
	k := m.c.Keys
	switch {
	case key.Matches(msg, k.NextStep):
		if m.pane.Last() {
			m.status = status{msg: i18n.M("ui.ws.last-step")}
			return nil, true
		}
		return m.beginStep(m.pane.Index() + 1), true
	case key.Matches(msg, k.PrevStep):
		if m.pane.Index() == 0 {
			return nil, true
		}
		return m.beginStep(m.pane.Index() - 1), true
	case key.Matches(msg, k.Hint):
		if !m.pane.ShowHint() {
			m.status = status{msg: i18n.M("ui.lesson.no-more-hints")}
		}
		return nil, true
	case key.Matches(msg, k.Autoplay):
		return m.toggleAutoplay(), true
	case key.Matches(msg, k.Presenter):
		m.togglePresenter()
		return nil, true
	case key.Matches(msg, k.ResetStep) && m.opts.StepSnapshots:
		m.dialog = m.resetDialog()
		return nil, true
	case key.Matches(msg, k.Answer):
		if m.pane.Step().Predict == nil || m.pane.Verdict().Passed {
			return nil, false
		}
		m.dialog = m.predictDialog()
		return nil, true
	case key.Matches(msg, k.Solution):
		if !m.pane.SolutionShown() {
			if !m.pane.ShowSolution() {
				m.status = status{msg: i18n.M("ui.lesson.no-solution")}
			}
			return nil, true
		}
		cmd, ok := m.pane.NextSolution()
		if !ok {
			m.status = status{msg: i18n.M("ui.lesson.solution-done")}
			return nil, true
		}
		// Shown, not focused: s again runs the next command.
		run := m.cmdline.Show(cmd.String())
		m.layout()
		return run, true
	}
	if m.focus != focusLesson {
		return nil, false
	}
	switch {
	case key.Matches(msg, k.Up):
		m.pane.Scroll(-1)
	case key.Matches(msg, k.Down):
		m.pane.Scroll(1)
	case key.Matches(msg, k.PageUp):
		m.pane.Scroll(-m.pane.PageSize())
	case key.Matches(msg, k.PageDown):
		m.pane.Scroll(m.pane.PageSize())
	default:
		return nil, false
	}
	return nil, true
}

// lessonKeys are the lesson pane's keys that work now.
func (m *Model) lessonKeys() []key.Binding {
	return append(m.stepKeys(), m.scrollKeys()...)
}

// stepKeys are the keys that move through the lesson, as they apply now.
func (m *Model) stepKeys() []key.Binding {
	k := m.c.Keys
	var out []key.Binding
	if !m.pane.Last() {
		out = append(out, k.NextStep)
	}
	if m.pane.HintsLeft() > 0 {
		out = append(out, k.Hint)
	}
	if m.pane.Step().Predict != nil && !m.pane.Verdict().Passed {
		out = append(out, k.Answer)
	}
	switch {
	case m.Autoplaying() && m.auto.phase == autoAsk:
		out = append([]key.Binding{k.AutoplayGoOn()}, out...)
	case m.Autoplaying():
		out = append([]key.Binding{k.AutoplayPause()}, out...)
	case m.auto.on:
		out = append([]key.Binding{k.AutoplayResume()}, out...)
	default:
		out = append(out, k.Autoplay)
	}
	if m.presenting() {
		out = append(out, k.PresenterOff())
	} else {
		out = append(out, k.Presenter)
	}
	switch {
	case m.pane.SolutionLeft() > 0:
		out = append(out, k.RunSolution())
	case !m.pane.SolutionShown() && len(m.pane.Step().Solution) > 0:
		out = append(out, k.Solution)
	}
	if m.pane.Index() > 0 {
		out = append(out, k.PrevStep)
	}
	if m.opts.StepSnapshots {
		out = append(out, k.ResetStep)
	}
	return out
}

// scrollKeys are the keys that scroll the lesson pane while it has the
// focus.
func (m *Model) scrollKeys() []key.Binding {
	if m.focus != focusLesson {
		return nil
	}
	k := m.c.Keys
	return []key.Binding{k.Up, k.Down, k.PageDown, k.PageUp}
}

// names are the words the command line completes besides commands: the
// nodes, the members, and the targets chaos takes.
func (m *Model) names() []string {
	var out []string
	if m.info != nil {
		for _, n := range m.info.Nodes {
			out = append(out, n.Name)
		}
		for i := range m.info.Members {
			out = append(out, "etcd-"+strconv.Itoa(i+1))
		}
	}
	out = append(out, "leader")
	slices.Sort(out)
	return slices.Compact(out)
}

// viewOf returns the live view a lesson step names, or def.
func viewOf(v lessons.View, def ViewID) ViewID {
	if i := slices.Index(lessons.Views, v); i >= 0 {
		return ViewID(i + 1)
	}
	return def
}

// sortBindings orders bindings by their key.
func sortBindings(bs []key.Binding) {
	sort.Slice(bs, func(i, j int) bool { return bs[i].Help().Key < bs[j].Help().Key })
}
