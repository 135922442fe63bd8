// Package workspace is the screen of a running cluster: a header naming
// the cluster and the views, the lesson pane on the left when a lesson is
// open, the live view on the right, the command line's output below it
// while it is open, a status line where actions report, and a footer of
// the keys that work in the focused pane.
//
// The workspace also judges the lesson: it feeds the lesson's Evaluator
// everything it learns (the Observer's stream, the Kubernetes and etcd
// watches of the lesson feed, the commands run and the actions taken with
// keys) and hands each new verdict to the lesson pane.
package workspace

import (
	"context"
	"io"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/lessons"
	"github.com/klab-dev/klab/lessons/live"
	"github.com/klab-dev/klab/ui/cmdline"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/labio"
	"github.com/klab-dev/klab/ui/labstate"
	"github.com/klab-dev/klab/ui/record"
	"github.com/klab-dev/klab/ui/styles"
	"github.com/klab-dev/klab/ui/views/lesson"
	"github.com/klab-dev/klab/ui/views/overview"
	"github.com/klab-dev/klab/ui/views/raft"
)

// ViewID names a live view; its value is its key.
type ViewID int

// The live views.
const (
	ViewOverview ViewID = iota + 1
	ViewRaft
	ViewScheduler
	ViewProxy
	ViewEvents
)

// LessonFeed is what the lesson's checks read besides the Observer: the
// Kubernetes and etcd watches, API requests, kube-proxies' modes and
// traffic runs (lessons/live's Feed), following what Follow asks for.
type LessonFeed interface {
	Observations() <-chan []lessons.Observation
	Follow(needs lessons.Needs)
	Close()
}

// Options are the workspace's optional parts.
type Options struct {
	// Lesson, when set, opens the lesson pane at step Step.
	Lesson *lessons.Lesson
	Step   int
	// Progress records the steps done; nil keeps none.
	Progress *lessons.Progress
	// Run runs the command line's commands; nil leaves it unable to.
	Run cmdline.Runner
	// Autoplay plays the lesson from Step once the workspace starts.
	Autoplay bool
	// StartFeed starts the lesson feed for the cluster info describes.
	StartFeed func(ctx context.Context, info *lab.Info) LessonFeed
	// Convert turns an Observer observation into lesson observations.
	Convert func(o lab.Observation, members []lab.MemberInfo) []lessons.Observation
	// Views are the views besides Overview and Raft (which the workspace
	// makes, on its State), by ID.
	Views map[ViewID]common.View
	// Recording, when set, records the Observer's stream, what the views'
	// own sources tell them and the runtime's reports, before the views
	// see them (package record); the timeline (T) scrubs it.
	Recording *record.Live
	// StepSnapshots takes an etcd snapshot of the cluster as each lesson
	// step starts, offers the key that resets the cluster to one, and
	// follows the resets klab reset makes from another terminal.
	StepSnapshots bool
}

// Model is the workspace.
type Model struct {
	c             *common.Common
	width, height int

	lab   labio.Lab
	info  *lab.Info
	state *labstate.State
	view  ViewID

	// views are the live views by ID, Overview and Raft always among
	// them.
	views map[ViewID]common.View
	// shown is the view the views were last told is shown (showViews).
	shown ViewID
	// active is when a key was last pressed or news last came.
	active time.Time

	opts Options
	// ctx is the workspace's, from Start until Stop.
	ctx  context.Context
	pane *lesson.Pane
	auto autoplay
	// presenter is the presenter layout: the live view on the whole
	// width under a caption (P).
	presenter bool
	// themeBefore is the theme the presenter layout replaced.
	themeBefore styles.Theme
	// lessonStarted is when the lesson opened, for klab notes' clock.
	lessonStarted time.Time
	// snaps are the step snapshots of this lesson run: the steps whose
	// snapshot was taken (or restored) since the workspace opened.
	snaps   snapshots
	eval    *lessons.Evaluator
	feed    LessonFeed
	cmdline *cmdline.Model
	focus   focus

	// observe is the Observer's stream and news its signal of news
	// (lab.Observer.News); stop ends the Observer.
	obs     *lab.Observer
	observe <-chan lab.Observation
	news    <-chan struct{}
	stop    context.CancelFunc
	// componentsBusy keeps one runtime query in flight at a time.
	componentsBusy bool

	status status
	dialog *dialog
	// closing is set once the user chose to quit and the lab is being
	// closed.
	closing bool
	// reshaping is set when the lab is being removed to start it again in
	// the shape a lesson step needs, rather than to quit.
	reshaping bool
	// closed is set once the lab is closed; closeErr says how that went.
	closed   bool
	closeErr error
	writes   int

	// rewind is the timeline while the views are rewound (T); nil live.
	rewind *rewind
	// comps is the runtime's report last recorded.
	comps []byte
	// viewW and viewH are the live view's size.
	viewW, viewH int
}

// focus is the pane the arrow and page keys go to.
type focus int

const (
	focusView focus = iota
	focusLesson
)

// New returns the workspace of l, drawn from st. Start begins observing.
func New(c *common.Common, l labio.Lab, st *labstate.State, opts Options) *Model {
	m := &Model{c: c, lab: l, state: st, view: ViewRaft, opts: opts, views: map[ViewID]common.View{
		ViewOverview: overview.New(c, st),
		ViewRaft:     raft.New(c, st),
	}}
	for id, v := range opts.Views {
		m.views[id] = v
	}
	if l != nil {
		m.info = l.Info()
	}
	run := opts.Run
	if run != nil && m.info != nil {
		// Commands act on this cluster, whatever klab would pick by
		// default.
		name := m.info.Name
		run = func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			return opts.Run(ctx, live.WithCluster(args, name), stdout, stderr)
		}
	}
	m.cmdline = cmdline.New(c, run, &cmdline.Completer{Names: m.names})
	if opts.Lesson != nil && len(opts.Lesson.Steps) > 0 {
		m.pane = lesson.New(c, opts.Lesson, opts.Step)
		if m.info != nil {
			m.pane.SetRuntime(m.info.Runtime)
		}
		m.eval = lessons.NewEvaluator()
		m.focus = focusLesson
		if p := opts.Progress; p != nil {
			for _, st := range opts.Lesson.Steps {
				if p.Done(opts.Lesson.ID, st.ID) {
					m.pane.SetDone(st.ID)
				}
				if c, ok := p.Answer(opts.Lesson.ID, st.ID); ok {
					m.pane.SetAnswer(st.ID, c)
				}
			}
		}
		m.view = viewOf(m.pane.Step().View, m.view)
	}
	return m
}

// Start starts an Observer of the lab's members and returns the commands
// that read it and ask the runtime for the components' states.
func (m *Model) Start(ctx context.Context) tea.Cmd {
	ctx, m.stop = context.WithCancel(ctx)
	m.ctx = ctx
	obs := lab.NewObserver(m.info.Members, lab.ObserverOptions{})
	go obs.Run(ctx)
	m.obs, m.observe, m.news = obs, obs.Observations(), obs.News()
	m.active = time.Now()
	cmds := []tea.Cmd{m.waitObservations(), m.components()}
	for _, v := range m.views {
		cmds = append(cmds, v.Start(ctx, m.info))
	}
	m.shown = -1
	cmds = append(cmds, m.showViews())
	if m.pane != nil {
		if m.opts.StartFeed != nil {
			m.feed = m.opts.StartFeed(ctx, m.info)
			cmds = append(cmds, waitFeed(m.feed))
		}
		if m.opts.Autoplay {
			// On before the step begins: its question is the room's.
			m.auto.on = true
		}
		cmds = append(cmds, m.beginStep(m.pane.Index()), m.startResetPoll())
	}
	return tea.Batch(cmds...)
}

// Stop ends the Observer, the feeds and a command still running.
func (m *Model) Stop() {
	if m.presenter {
		m.c.SetTheme(m.themeBefore)
	}
	if m.stop != nil {
		m.stop()
	}
	if m.feed != nil {
		m.feed.Close()
	}
	if m.opts.Recording != nil {
		_ = m.opts.Recording.Close()
		m.opts.Recording = nil
	}
	m.cmdline.Stop()
}

// Lab returns the lab shown.
func (m *Model) Lab() labio.Lab { return m.lab }

// State returns the observed state.
func (m *Model) State() *labstate.State { return m.state }

// ViewID returns the live view shown.
func (m *Model) ViewID() ViewID { return m.view }

// Closing reports whether the lab is being closed for quitting.
func (m *Model) Closing() bool { return m.closing }

// Closed reports whether the lab was closed, and the error closing it.
func (m *Model) Closed() (bool, error) { return m.closed, m.closeErr }

// QuitKeep closes an owned lab, keeping its data, and quits: what Ctrl-C
// does, since a cluster killed without a clean stop would lose nothing but
// could leave members mid-write.
func (m *Model) QuitKeep() tea.Cmd {
	if m.closing {
		return nil
	}
	if m.lab == nil || !m.lab.Owned() {
		m.Stop()
		return tea.Quit
	}
	return m.quit(false)
}

// SetSize sets the workspace's size.
func (m *Model) SetSize(width, height int) {
	m.width, m.height = width, height
	m.layout()
}

// layout gives every pane its cells: the lesson pane takes two fifths of
// the width on the left (at least 30 cells, at most 64), the command
// line's output two fifths of the live view's height while it is open.
func (m *Model) layout() {
	bw, bh := m.bodySize()
	lw := m.lessonWidth()
	// The live view's column: under the caption in the presenter layout.
	lh := bh
	if m.presenting() {
		lh = max(bh-captionHeight, 0)
	}
	vw, vh := bw-lw, lh
	if m.cmdline.Shown() {
		ch := min(max(lh*2/5, 5), lh)
		vh = lh - ch
		m.cmdline.SetSize(vw, ch)
	}
	if m.pane != nil && !m.presenting() {
		m.pane.SetSize(lw, bh)
	}
	for _, v := range m.views {
		v.SetSize(vw, vh)
	}
	m.viewW, m.viewH = vw, vh
	if m.rewind != nil {
		m.rewind.views.SetSize(vw, max(vh-timelineHeight, 1))
	}
}

// lessonWidth is the lesson pane's width, 0 without a lesson.
func (m *Model) lessonWidth() int {
	if m.pane == nil || m.presenting() {
		return 0
	}
	return min(max(m.width*2/5, 30), 64, m.width/2)
}

// bodySize is the panes' size: everything but the header, the status
// line and the footer.
func (m *Model) bodySize() (int, int) { return m.width, max(m.height-3, 0) }

func (m *Model) components() tea.Cmd {
	if m.componentsBusy || m.lab == nil {
		return nil
	}
	m.componentsBusy = true
	return labio.Components(m.lab)
}

// Unseen reports whether msg changes nothing on the screen: it belongs to
// a source of a view that is not shown. Such a view still takes it.
func (m *Model) Unseen(msg tea.Msg) bool {
	for id, v := range m.views {
		if v.Owns(msg) {
			return id != m.view
		}
	}
	return false
}

// Update handles the Observer's stream, the feeds, the results of
// actions and commands, and keys.
func (m *Model) Update(msg tea.Msg) (*Model, tea.Cmd) {
	_, cmd := m.update(msg)
	return m, tea.Batch(cmd, m.showViews())
}

// calmAfter is how long a workspace goes without a key pressed or news
// from the cluster before it is calm: it draws a steady cluster's traffic
// once a second rather than four times (lab.CalmBeat).
const calmAfter = 10 * time.Second

// pace returns the beat the workspace draws routine traffic on, calm or
// not, and sets it on the Observer: the members send it on that beat.
func (m *Model) pace() time.Duration {
	beat := lab.RoutineBeat
	if time.Since(m.active) >= calmAfter {
		beat = lab.CalmBeat
	}
	if m.obs != nil {
		m.obs.SetBeat(beat)
	}
	return beat
}

// waitObservations waits for the Observer's next batch at the pace.
func (m *Model) waitObservations() tea.Cmd {
	return labio.WaitObservations(m.observe, m.news, m.pace())
}

// showViews tells the view shown and the one hidden, if the view shown
// changed.
func (m *Model) showViews() tea.Cmd {
	if m.shown == m.view {
		return nil
	}
	var cmds []tea.Cmd
	for id, v := range m.views {
		if id == m.view || id == m.shown {
			cmds = append(cmds, v.Show(id == m.view))
		}
	}
	m.shown = m.view
	return tea.Batch(cmds...)
}

func (m *Model) update(msg tea.Msg) (*Model, tea.Cmd) {
	var cmds []tea.Cmd
	// Every view sees every message but keys, which go to the view shown
	// (handleKey), and takes what it follows.
	if _, ok := msg.(tea.KeyMsg); !ok {
		m.recordTapes(msg)
		for _, v := range m.views {
			cmds = append(cmds, v.Update(msg))
		}
	}
	switch msg := msg.(type) {
	case labio.ObservationsMsg:
		if m.opts.Recording != nil {
			m.opts.Recording.Observe(msg.Batch)
		}
		refresh := false
		for _, o := range msg.Batch {
			if !lab.Routine(o) {
				m.active = time.Now()
			}
			if mem := m.state.Member(o.Header().Member); mem != nil {
				_, down := o.(*lab.UnreachableObservation)
				_, up := o.(*lab.StatusObservation)
				refresh = refresh || down || up && !mem.Reachable
			}
			m.state.Apply(o)
			if m.eval != nil && m.opts.Convert != nil {
				for _, lo := range m.opts.Convert(o, m.info.Members) {
					cmds = append(cmds, m.judge(lo))
				}
			}
		}
		cmds = append(cmds, m.waitObservations())
		if refresh {
			// A member went or came back: ask the runtime why.
			cmds = append(cmds, m.components())
		}
	case feedMsg:
		if msg.from != m.feed {
			break
		}
		for _, lo := range msg.batch {
			cmds = append(cmds, m.judge(lo))
		}
		cmds = append(cmds, waitFeed(m.feed))
	case labio.ComponentsMsg:
		m.componentsBusy = false
		if msg.Err == nil {
			m.state.SetComponents(msg.Infos)
		}
	case raft.ActionMsg:
		cmds = append(cmds, m.raftAction(msg.Action))
	case labio.ActionMsg:
		cmds = append(cmds, m.actionDone(msg))
		if len(msg.Args) > 0 {
			cmds = append(cmds, m.judge(lessons.CommandObserved{Args: msg.Args, Err: msg.Err}))
		}
	case autoTickMsg:
		cmds = append(cmds, m.autoTicked(msg))
	case cmdline.DoneMsg:
		cmds = append(cmds, m.cmdline.Update(msg), m.autoCommandDone())
		cmds = append(cmds, m.judge(lessons.CommandObserved{Args: msg.Args, Err: msg.Err, Output: msg.Output}))
		// A command may have changed what the runtime runs.
		cmds = append(cmds, m.components())
	case progressErrMsg:
		m.status = status{err: msg.err}
	case stepSnapshotMsg:
		m.stepSnapshotDone(msg)
	case resetDoneMsg:
		cmds = append(cmds, m.resetDone(msg))
	case resetPollMsg:
		cmds = append(cmds, m.resetPolled(msg))
	case labio.ClosedMsg:
		m.closed, m.closeErr = true, msg.Err
		if m.reshaping {
			r := ReshapeMsg{Name: m.info.Name, Lesson: m.pane.Lesson(), Step: m.pane.Index(), Autoplay: m.Autoplaying(), Err: msg.Err}
			return m, func() tea.Msg { return r }
		}
		return m, tea.Quit
	case tea.KeyMsg:
		m.active = time.Now()
		m.pace()
		if m.closing {
			return m, nil
		}
		if m.dialog != nil {
			return m, m.updateDialog(msg)
		}
		return m, m.handleKey(msg)
	}
	return m, tea.Batch(cmds...)
}

// Typing reports whether keys are text, for the command line or for the
// view shown, so that the keys that mean something everywhere (L, ?) are
// typed instead.
func (m *Model) Typing() bool {
	return (m.cmdline.Active() || m.shownView().Typing()) && !m.closing && m.dialog == nil
}

// ShortHelp lists the keys that work now, for the footer.
func (m *Model) ShortHelp() []key.Binding {
	k := m.c.Keys
	if m.closing {
		return nil
	}
	if m.dialog != nil {
		return m.dialog.keys(k)
	}
	if m.cmdline.Active() {
		return m.cmdline.Keys()
	}
	if v := m.shownView(); v.Typing() {
		return v.ShortHelp()
	}
	if m.rewind != nil {
		out := append([]key.Binding{k.Live, k.Overview, k.Raft}, m.switchKeys()...)
		return append(out, k.Command, k.Help, k.Quit, k.Lang)
	}
	// The footer is cut at the screen's width: what the focused pane
	// offers first, then the keys to find all the others (?) and to
	// leave, then the rest.
	var out []key.Binding
	if m.focus == focusLesson && m.pane != nil {
		// The step keys, then ? and q, then the scrolling that the
		// arrows make plain enough to be cut first.
		out = append(out, m.stepKeys()...)
		out = append(out, k.Focus, k.Command, k.Help, k.Quit)
		out = append(out, m.scrollKeys()...)
	} else {
		out = append(out, m.viewKeys()...)
		if m.pane != nil {
			out = append(out, k.Focus)
		}
		out = append(out, k.Command, k.Help, k.Quit)
	}
	out = append(out, m.switchKeys()...)
	if m.status.text() != "" {
		out = append(out, k.Back)
	}
	return append(out, k.Lang)
}

// FullHelp lists the keys by group, for the full help.
func (m *Model) FullHelp() [][]key.Binding {
	k := m.c.Keys
	groups := [][]key.Binding{append([]key.Binding{k.Overview, k.Raft}, m.switchKeys()...)}
	groups = append(groups, m.shownView().FullHelp()...)
	if m.pane != nil {
		groups = append(groups, append(m.lessonKeys(), k.Focus))
	}
	last := []key.Binding{k.Command, k.Lang, k.Help, k.Back, k.Quit, k.ForceQuit}
	if m.opts.Recording != nil {
		last = append([]key.Binding{k.Timeline}, last...)
	}
	return append(groups, last)
}

// switchKeys are the keys of the views other than Overview and Raft that
// this workspace has.
func (m *Model) switchKeys() []key.Binding {
	k := m.c.Keys
	var out []key.Binding
	for id, b := range map[ViewID]key.Binding{ViewScheduler: k.Scheduler, ViewProxy: k.Proxy, ViewEvents: k.Events} {
		if m.views[id] != nil {
			out = append(out, b)
		}
	}
	sortBindings(out)
	return out
}

// shownView is the view shown: the Raft view stands in for one a lesson
// step names that this workspace lacks.
func (m *Model) shownView() common.View {
	if v := m.views[m.view]; v != nil {
		return v
	}
	return m.views[ViewRaft]
}

// viewKeys are the keys the view shown offers now.
func (m *Model) viewKeys() []key.Binding { return m.shownView().ShortHelp() }
