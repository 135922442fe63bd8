// Package home is the screen klab opens on: the language, the shape of
// the cluster to start, the runtime, and the running clusters to attach
// to; then, once Start is pressed, the creation steps as they happen.
package home

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/lessons"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/labio"
)

// Kinds of row, in screen order: the language, the lessons (free play
// first), the cluster's settings, the start, the running clusters.
const (
	rowLang = iota
	rowLesson
	rowMasters
	rowWorkers
	rowSpeed
	rowRuntime
	rowName
	rowStart
	rowRunning
)

// row is one row of the form: its kind, and which lesson or running
// cluster it is (for lessons, 0 is free play).
type row struct{ kind, index int }

// Choices offered for the cluster's shape. The defaults given on the
// command line join them when they are not among them.
var (
	masterChoices  = []int{1, 3, 5}
	workerChoices  = []int{0, 1, 2, 3}
	speedChoices   = []float64{1, 2, 5, 10, 30, 60}
	runtimeChoices = []string{lab.RuntimeAuto, lab.RuntimeLocal, lab.RuntimeDocker}
)

// LangMsg asks the root model to switch the language.
type LangMsg struct{ Lang i18n.Lang }

// Model is the home screen.
type Model struct {
	c             *common.Common
	width, height int

	ctx    context.Context
	logger *slog.Logger

	cursor  int
	masters []int
	workers []int
	speeds  []float64
	spec    lab.Spec
	name    textinput.Model
	running []labio.Running

	lessons  []*lessons.Lesson
	progress *lessons.Progress
	// pack and problems are a lesson pack that did not load, and why.
	pack     string
	problems []*lessons.LoadError
	// lessonTop is the first lesson row shown when the terminal is too
	// short for them all (0 is free play); the list scrolls with the
	// cursor.
	lessonTop int
	// lesson is the lesson chosen, nil for free play; step is where it
	// opens.
	lesson *lessons.Lesson
	step   int
	// autostart starts the chosen lesson when the screen opens (klab
	// --lesson).
	autostart bool
	// docker is the Docker engine's state, once probed.
	docker *labio.DockerMsg

	// starting is set from Start until the cluster is ready or failed.
	starting *labio.Starting
	steps    []step
	err      error
	pending  string // the cluster being attached to
}

// step is one creation step as shown.
type step struct {
	ev   lab.StepEvent
	done bool
}

// Options are the home screen's lessons.
type Options struct {
	// Lessons are the lessons listed, in order.
	Lessons []*lessons.Lesson
	// Progress says which steps are done; nil shows none.
	Progress *lessons.Progress
	// Lesson, when set, is chosen and started at once, at Step (klab
	// --lesson id[/step]).
	Lesson *lessons.Lesson
	Step   int
	// Pack and Problems are a lesson pack (klab --lessons) that did not
	// load, and why.
	Pack     string
	Problems []*lessons.LoadError
}

// New returns the home screen with spec (from the command line's flags) as
// its defaults. ctx bounds a start; logger receives the cluster's log.
func New(c *common.Common, ctx context.Context, spec lab.Spec, logger *slog.Logger, opts Options) *Model {
	ti := textinput.New()
	ti.Prompt = ""
	ti.CharLimit = 63
	ti.SetValue(spec.Name)
	// A blinking cursor would redraw the screen twice a second for
	// nothing.
	ti.Cursor.SetMode(cursor.CursorStatic)
	m := &Model{
		c: c, ctx: ctx, logger: logger,
		masters:  withChoice(masterChoices, spec.Masters),
		workers:  withChoice(workerChoices, spec.Workers),
		speeds:   withChoice(speedChoices, spec.Speed),
		spec:     spec,
		name:     ti,
		lessons:  opts.Lessons,
		progress: opts.Progress,
		pack:     opts.Pack,
		problems: opts.Problems,
	}
	m.cursor = m.rowIndex(row{rowStart, 0})
	if opts.Lesson != nil {
		m.chooseStep(opts.Lesson, opts.Step)
		m.autostart = true
	} else if len(m.lessons) > 0 {
		// The first lesson not finished is where a student goes on.
		m.cursor = m.rowIndex(row{rowLesson, 1})
		for i, l := range m.lessons {
			if done, total := m.completed(l); done < total {
				m.cursor = m.rowIndex(row{rowLesson, i + 1})
				break
			}
		}
	}
	return m
}

// rowList lists the form's rows in screen order.
func (m *Model) rowList() []row {
	out := []row{{rowLang, 0}}
	if len(m.lessons) > 0 {
		for i := 0; i <= len(m.lessons); i++ {
			out = append(out, row{rowLesson, i})
		}
	}
	for k := rowMasters; k <= rowStart; k++ {
		out = append(out, row{k, 0})
	}
	for i := range m.running {
		out = append(out, row{rowRunning, i})
	}
	return out
}

// rowIndex returns the position of r in the form.
func (m *Model) rowIndex(r row) int {
	return max(slices.Index(m.rowList(), r), 0)
}

// at returns the row under the cursor.
func (m *Model) at() row {
	rows := m.rowList()
	return rows[min(m.cursor, len(rows)-1)]
}

// choose picks a lesson (nil for free play) at the step where the student
// left off (the start of one they finished).
func (m *Model) choose(l *lessons.Lesson) {
	step := 0
	if l != nil {
		step = m.progress.ResumeAt(l)
	}
	m.chooseStep(l, step)
}

// chooseStep picks a lesson at a step, and gives the form the shape of
// that step's cluster.
func (m *Model) chooseStep(l *lessons.Lesson, step int) {
	m.lesson, m.step = l, step
	if l == nil {
		return
	}
	shape := l.ShapeAt(step)
	m.spec.Masters, m.spec.Workers = shape.Masters, shape.Workers
	if shape.Speed > 0 {
		m.spec.Speed = shape.Speed
	} else if l.Cluster.Speed > 0 {
		m.spec.Speed = l.Cluster.Speed
	}
	m.masters = withChoice(m.masters, m.spec.Masters)
	m.workers = withChoice(m.workers, m.spec.Workers)
	m.speeds = withChoice(m.speeds, m.spec.Speed)
}

// Restart starts a cluster named name for a lesson's step that needs
// another shape, once the workspace removed the one it had.
func (m *Model) Restart(name string, l *lessons.Lesson, step int) tea.Cmd {
	m.name.SetValue(name)
	m.chooseStep(l, step)
	m.cursor = m.rowIndex(row{rowStart, 0})
	return m.start()
}

// Lesson returns the lesson chosen and the step it opens at; nil is free
// play.
func (m *Model) Lesson() (*lessons.Lesson, int) { return m.lesson, m.step }

// completed returns how many of l's steps are done.
func (m *Model) completed(l *lessons.Lesson) (done, total int) {
	if m.progress == nil {
		return 0, len(l.Steps)
	}
	return m.progress.Completed(l)
}

func withChoice[T int | float64](choices []T, v T) []T {
	if slices.Contains(choices, v) {
		return choices
	}
	out := append(slices.Clone(choices), v)
	slices.Sort(out)
	return out
}

// Init looks for running clusters and asks Docker how it is; with a
// lesson given on the command line, it starts its cluster at once.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{labio.ScanRunning(), labio.ProbeDocker()}
	if m.autostart {
		m.autostart = false
		cmds = append(cmds, m.start())
	}
	return tea.Batch(cmds...)
}

// SetSize sets the screen's size.
func (m *Model) SetSize(width, height int) { m.width, m.height = width, height }

// Starting reports whether a cluster is being started or attached to.
func (m *Model) Starting() bool { return m.starting != nil || m.pending != "" }

// InProgress returns the start in progress, if any, so that quitting can
// stop it.
func (m *Model) InProgress() *labio.Starting { return m.starting }

// Spec returns the spec the form describes now.
func (m *Model) Spec() lab.Spec {
	s := m.spec
	s.Name = strings.TrimSpace(m.name.Value())
	return s
}

func (m *Model) rows() int { return len(m.rowList()) }

func (m *Model) editingName() bool { return m.at().kind == rowName && !m.Starting() && m.err == nil }

// Update handles keys and the start's progress.
func (m *Model) Update(msg tea.Msg) (*Model, tea.Cmd) {
	k := m.c.Keys
	switch msg := msg.(type) {
	case labio.RunningMsg:
		cur := m.at()
		m.running = msg.Clusters
		m.cursor = min(m.rowIndex(cur), m.rows()-1)
	case labio.DockerMsg:
		m.docker = &msg
	case labio.StepMsg:
		m.addStep(msg.Event)
		return m, m.starting.Next()
	case labio.FailedMsg:
		m.err, m.starting, m.pending = msg.Err, nil, ""
	case tea.KeyMsg:
		if m.Starting() {
			return m, nil
		}
		if m.err != nil {
			if key.Matches(msg, k.Back) || key.Matches(msg, k.Select) {
				m.err, m.steps = nil, nil
				return m, labio.ScanRunning()
			}
			return m, nil
		}
		return m.updateForm(msg)
	}
	return m, nil
}

func (m *Model) updateForm(msg tea.KeyMsg) (*Model, tea.Cmd) {
	k := m.c.Keys
	switch {
	case key.Matches(msg, k.Up):
		m.move(-1)
	case key.Matches(msg, k.Down), key.Matches(msg, k.Focus):
		m.move(1)
	case key.Matches(msg, k.Left):
		if m.at().kind != rowName {
			return m, m.change(-1)
		}
	case key.Matches(msg, k.Right):
		if m.at().kind != rowName {
			return m, m.change(1)
		}
	case key.Matches(msg, k.Select):
		switch r := m.at(); r.kind {
		case rowStart:
			return m, m.start()
		case rowRunning:
			c := m.running[r.index]
			m.pending = c.Name
			return m, labio.Attach(c.Name)
		case rowLesson:
			if r.index == 0 {
				// Free play: the shape is the student's to set.
				m.choose(nil)
				m.cursor = m.rowIndex(row{rowMasters, 0})
				m.name.Blur()
				return m, nil
			}
			m.choose(m.lessons[r.index-1])
			return m, m.start()
		default:
			m.move(1)
		}
		return m, nil
	}
	if m.at().kind == rowName {
		// Only what a cluster name may hold gets typed; the rest are
		// keys of the screen.
		if msg.Type == tea.KeyRunes && !validNameRunes(msg.Runes) {
			return m, nil
		}
		var cmd tea.Cmd
		m.name, cmd = m.name.Update(msg)
		return m, cmd
	}
	return m, nil
}

func validNameRunes(rs []rune) bool {
	for _, r := range rs {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

func (m *Model) move(d int) {
	m.cursor = (m.cursor + d + m.rows()) % m.rows()
	if m.at().kind == rowName {
		m.name.Focus()
		m.name.CursorEnd()
	} else {
		m.name.Blur()
	}
}

// change moves the focused setting to its previous or next choice.
func (m *Model) change(d int) tea.Cmd {
	step := func(n, i int) int { return (i + d + n) % n }
	switch m.at().kind {
	case rowLang:
		langs := i18n.Langs
		i := slices.Index(langs, i18n.Current())
		return func() tea.Msg { return LangMsg{Lang: langs[step(len(langs), i)]} }
	case rowMasters:
		m.spec.Masters = m.masters[step(len(m.masters), slices.Index(m.masters, m.spec.Masters))]
	case rowWorkers:
		m.spec.Workers = m.workers[step(len(m.workers), slices.Index(m.workers, m.spec.Workers))]
	case rowSpeed:
		m.spec.Speed = m.speeds[step(len(m.speeds), slices.Index(m.speeds, m.spec.Speed))]
	case rowRuntime:
		i := slices.Index(runtimeChoices, m.spec.Runtime)
		m.spec.Runtime = runtimeChoices[step(len(runtimeChoices), max(i, 0))]
	}
	return nil
}

// start checks the form and starts the cluster. A bad name is refused here,
// with the same message `klab up` gives.
func (m *Model) start() tea.Cmd {
	spec := m.Spec()
	if err := spec.Validate(); err != nil {
		m.err = err
		return nil
	}
	m.steps = nil
	m.starting = labio.Start(m.ctx, spec, m.logger)
	return m.starting.Next()
}

// Ready clears the start once the cluster is up.
func (m *Model) Ready() { m.starting, m.pending, m.steps = nil, "", nil }

func (m *Model) addStep(ev lab.StepEvent) {
	if ev.Phase != lab.StepStarted {
		for i := len(m.steps) - 1; i >= 0; i-- {
			if m.steps[i].ev.Title.Key == ev.Title.Key && !m.steps[i].done {
				m.steps[i] = step{ev: ev, done: true}
				return
			}
		}
	}
	m.steps = append(m.steps, step{ev: ev, done: ev.Phase != lab.StepStarted})
}

// ShortHelp lists the keys that work on the home screen now.
func (m *Model) ShortHelp() []key.Binding {
	k := m.c.Keys
	switch {
	case m.Starting():
		return []key.Binding{k.ForceQuit}
	case m.err != nil:
		return []key.Binding{k.Back, k.ForceQuit}
	}
	out := []key.Binding{k.Up, k.Down}
	kind := m.at().kind
	if kind < rowName && kind != rowLesson {
		out = append(out, k.Left)
	}
	if kind >= rowStart || kind == rowLesson {
		out = append(out, k.Select)
	}
	out = append(out, k.Lang, k.Help)
	if m.editingName() {
		return append(out, k.ForceQuit)
	}
	return append(out, k.Quit)
}

// FullHelp lists every key of the home screen.
func (m *Model) FullHelp() [][]key.Binding {
	k := m.c.Keys
	return [][]key.Binding{{k.Up, k.Down, k.Left, k.Select}, {k.Lang, k.Help, k.Quit, k.ForceQuit}}
}

// QuitAllowed reports whether q quits now (it types a letter in the name).
func (m *Model) QuitAllowed() bool { return !m.editingName() && !m.Starting() }

func speedWord(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64) + "×"
}

func langWord(l i18n.Lang) string {
	switch l {
	case i18n.Korean:
		return "한국어"
	}
	return "English"
}
