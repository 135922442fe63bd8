// Package ui is klab's terminal user interface, built on Bubble Tea: a
// home screen to start a cluster or attach to a running one, then a
// workspace with five live views (Overview, Raft, Scheduler, Proxy,
// Events) and a lesson pane. It depends on cluster/lab; nothing in
// cluster/ imports it.
//
// The layout follows soft-serve's and glow's: one root model (model.go)
// holding the screens, one Styles (styles/) and one KeyMap (keys/) shared
// through common.Common, one folder per pane or view, every live view
// keeping one contract (common.View), and every I/O in a tea.Cmd
// (labio/). The views draw the etcd members' labstate.State, which the
// workspace folds from the Observer's stream, and what they follow
// themselves; nothing ticks while nothing happens.
package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"google.golang.org/grpc/grpclog"
	"k8s.io/klog/v2"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/lessons"
	"github.com/klab-dev/klab/lessons/live"
	"github.com/klab-dev/klab/ui/cmdline"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/prefs"
	"github.com/klab-dev/klab/ui/screen"
	"github.com/klab-dev/klab/ui/styles"
	"github.com/klab-dev/klab/ui/views/events"
	"github.com/klab-dev/klab/ui/views/proxy"
	"github.com/klab-dev/klab/ui/views/scheduler"
	"github.com/klab-dev/klab/ui/workspace"
)

// LogFile is the TUI's log under klab's state dir: the terminal belongs to
// the screen, so nothing may be printed on it while the TUI runs.
const LogFile = "ui.log"

// Options configures Run.
type Options struct {
	// Spec is the home screen's default cluster shape (klab's flags).
	Spec lab.Spec
	// Out receives what is printed after the TUI ends (where the
	// cluster's data went).
	Out io.Writer
	// Lesson opens a lesson at once: its id, or id/step to begin at a
	// step (klab --lesson).
	Lesson string
	// Autoplay plays the lesson (klab --lesson id --autoplay) once its
	// cluster is up.
	Autoplay bool
	// Record records what the views see (the Observer's stream, their
	// own sources' tapes, the runtime's reports) to the cluster's state
	// dir (events.jsonl.gz), for the timeline and klab replay.
	Record bool
	// Theme is the palette the TUI is drawn in (klab --theme); empty is
	// the standard one.
	Theme styles.Theme
	// Cast records the session to this file in the asciicast v2 format
	// (klab --cast).
	Cast string
	// StepSnapshots takes an etcd snapshot as each lesson step starts and
	// offers to reset the cluster to one (R, klab reset --step).
	StepSnapshots bool
	// Pack is a folder of lessons (klab --lessons <dir>) listed after the
	// built-in ones. A pack with problems adds none of its lessons; the
	// home screen lists the problems, each at its file and line.
	Pack string
	// Lessons are the lessons on the home screen; Run loads the embedded
	// ones when nil. Progress records the student's steps.
	Lessons  []*lessons.Lesson
	Progress *lessons.Progress
	// Run runs the command line's commands (klab's own CLI).
	Run cmdline.Runner
	// StartFeed and Convert feed the lesson's checks.
	StartFeed func(ctx context.Context, info *lab.Info) workspace.LessonFeed
	Convert   func(o lab.Observation, members []lab.MemberInfo) []lessons.Observation
	// Views builds a workspace's views besides Overview and Raft.
	Views func(c *common.Common) map[workspace.ViewID]common.View

	// lesson and step are Lesson resolved; problems are the Pack's.
	lesson   *lessons.Lesson
	step     int
	problems []*lessons.LoadError
}

// DefaultViews are the views besides Overview and Raft: the scheduler's
// decisions, the kube-proxies' rules and traffic, the events and the API
// requests.
func DefaultViews(c *common.Common) map[workspace.ViewID]common.View {
	return map[workspace.ViewID]common.View{
		workspace.ViewScheduler: scheduler.New(c),
		workspace.ViewProxy:     proxy.New(c),
		workspace.ViewEvents:    events.New(c),
	}
}

// loadPack loads the lessons in dir for the home screen, beside those of
// have: a problem in any file (or an id that have holds already) keeps the
// whole pack out, as the loader keeps a broken lesson out, and is
// returned to be shown. A folder that cannot be read is an error.
func loadPack(have []*lessons.Lesson, dir string) ([]*lessons.Lesson, []*lessons.LoadError, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, nil, i18n.NewError("ui.err.pack-not-dir", dir)
	}
	pack, err := lessons.LoadDir(dir)
	if err != nil {
		problems := lessons.LoadErrors(err)
		if len(problems) == 0 {
			return nil, nil, i18n.Wrap(err, "lessons.cmd.err.load", dir)
		}
		return nil, problems, nil
	}
	var problems []*lessons.LoadError
	for _, l := range pack {
		if slices.ContainsFunc(have, func(h *lessons.Lesson) bool { return h.ID == l.ID }) {
			problems = append(problems, &lessons.LoadError{File: l.File, Path: "id", Msg: i18n.M("ui.err.pack-id-taken", l.ID)})
		}
	}
	if len(problems) > 0 {
		return nil, problems, nil
	}
	return pack, nil, nil
}

// ResolveLesson finds the lesson (and step) that --lesson names among
// ls: "id", or "id/step" with the step's id or number.
func ResolveLesson(ls []*lessons.Lesson, ref string) (*lessons.Lesson, int, error) {
	id, stepID, _ := strings.Cut(ref, "/")
	var ids []string
	for _, l := range ls {
		ids = append(ids, l.ID)
		if l.ID != id {
			continue
		}
		if stepID == "" {
			return l, -1, nil
		}
		if _, i := l.FindStep(stepID); i >= 0 {
			return l, i, nil
		}
		return nil, 0, i18n.NewError("ui.err.unknown-step", id, stepID, l.StepList())
	}
	return nil, 0, i18n.NewError("ui.err.unknown-lesson", id, strings.Join(ids, ", "))
}

// prepare loads the lessons and the progress, fills in the lesson feed
// and the views, and resolves --lesson.
func (o *Options) prepare() error {
	if o.StartFeed == nil {
		o.StartFeed = func(ctx context.Context, info *lab.Info) workspace.LessonFeed {
			return live.StartFeed(ctx, info, live.FeedOptions{NoMembers: true})
		}
	}
	if o.Convert == nil {
		o.Convert = live.Convert
	}
	if o.Views == nil {
		o.Views = DefaultViews
	}
	if o.Lessons == nil {
		ls, err := lessons.Embedded()
		if err != nil {
			return err
		}
		o.Lessons = ls
	}
	if o.Pack != "" {
		pack, problems, err := loadPack(o.Lessons, o.Pack)
		if err != nil {
			return err
		}
		o.Lessons = append(slices.Clip(o.Lessons), pack...)
		o.problems = problems
	}
	if o.Progress == nil {
		if home, err := lab.Home(); err == nil {
			// Progress that cannot be read is not worth refusing to run:
			// the lessons work without it.
			o.Progress, _ = lessons.OpenProgress(filepath.Join(home, lessons.ProgressFile))
		}
	}
	if o.Lesson == "" {
		return nil
	}
	l, step, err := ResolveLesson(o.Lessons, o.Lesson)
	if err != nil {
		return err
	}
	o.lesson, o.step = l, step
	if step < 0 {
		// The lesson's own place: where the student left it.
		o.step = o.Progress.ResumeAt(l)
	}
	return nil
}

// closeTimeout bounds the clean stop of a cluster left running when the
// TUI ends without the quit dialog (a signal, a crash of the terminal).
const closeTimeout = 30 * time.Second

// Run runs the TUI until the user quits. A cluster started from it runs in
// this process and is stopped (its data kept, unless the user chose to
// remove it) before Run returns.
func Run(ctx context.Context, opts Options) error {
	if err := opts.prepare(); err != nil {
		return err
	}
	i18n.SetLang(prefs.Language(prefs.Load()))
	logger, closeLog := openLog()
	defer closeLog()
	// gRPC logs to stderr by default; inside the TUI it would tear the
	// screen.
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, io.Discard))
	// client-go logs through klog, to stderr by default: to the log file.
	klog.SetSlogLogger(logger)
	// Ask the terminal for its background before Bubble Tea owns the
	// input: asking later would swallow the answer as key presses.
	lipgloss.HasDarkBackground()

	c := common.New()
	if opts.Theme != "" {
		c.SetTheme(opts.Theme)
	}
	m := NewModel(ctx, c, opts, logger)
	term, err := screen.Open(FPS, opts.Cast)
	if err != nil {
		return err
	}
	release := screen.HoldOutput()
	p := NewProgram(m, term.Screen, tea.WithContext(ctx), tea.WithInput(term.In))
	sizeCtx, stopSize := context.WithCancel(ctx)
	term.WatchSize(sizeCtx, func(w, h int) { p.Send(tea.WindowSizeMsg{Width: w, Height: h}) })
	_, runErr := p.Run()
	stopSize()
	held := release()
	runErr = errors.Join(runErr, term.Screen.Err(), term.Close())
	// What was printed meanwhile (a panic's report) shows now, on the
	// main screen.
	os.Stderr.Write(held)
	if errors.Is(runErr, tea.ErrProgramKilled) && ctx.Err() != nil {
		runErr = nil // the context ended: a normal way out
	}
	return errors.Join(runErr, m.cleanup(opts.Out))
}

// FPS is the most frames a second the screen writes. The Observer's news
// is gathered into one frame per 50 ms at the most
// (labio.WaitObservations), so a faster screen would draw nothing more.
const FPS = 20

// NewProgram returns the Bubble Tea program that runs m with its frames
// drawn by s instead of Bubble Tea's renderer, which looks for a new frame
// FPS times a second even when nothing changed: s writes only frames that
// differ. The size m is given goes to s too.
func NewProgram(m tea.Model, s *screen.Screen, opts ...tea.ProgramOption) *tea.Program {
	return tea.NewProgram(drawn{Model: m, s: s}, append(opts, tea.WithoutRenderer())...)
}

// drawn hands its model's frames to a screen. Its own View is empty: the
// program has no renderer to take it.
type drawn struct {
	tea.Model
	s *screen.Screen
}

func (d drawn) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if ws, ok := msg.(tea.WindowSizeMsg); ok {
		d.s.Resize(ws.Width, ws.Height)
	}
	var cmd tea.Cmd
	d.Model, cmd = d.Model.Update(msg)
	return d, cmd
}

func (d drawn) View() string {
	d.s.Draw(d.Model.View())
	return ""
}

// cleanup stops what the TUI started and did not stop: a start in
// progress, or a cluster running in this process.
func (m *Model) cleanup(out io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if st := m.home.InProgress(); st != nil {
		if l := st.Abort(); l != nil {
			return l.Close(ctx, false)
		}
		return nil
	}
	if m.ws == nil {
		return nil
	}
	m.ws.Stop()
	l := m.ws.Lab()
	if !l.Owned() {
		return nil
	}
	info := l.Info()
	closed, err := m.ws.Closed()
	if !closed {
		err = l.Close(ctx, false)
	}
	if out != nil {
		dir := stateDirOf(info.Name)
		if _, statErr := os.Stat(dir); statErr == nil {
			if info.Runtime == lab.RuntimeDocker {
				fmt.Fprintln(out, i18n.T("ui.bye.kept-docker", info.Name))
			} else {
				fmt.Fprintln(out, i18n.T("ui.bye.kept", info.Name, dir))
			}
		} else {
			fmt.Fprintln(out, i18n.T("ui.bye.removed", info.Name))
		}
	}
	return err
}

// openLog opens the TUI's log file; without one, the log is discarded.
func openLog() (*slog.Logger, func()) {
	home, err := lab.Home()
	if err == nil {
		err = os.MkdirAll(home, 0o700)
	}
	if err != nil {
		return slog.New(slog.DiscardHandler), func() {}
	}
	f, err := os.OpenFile(filepath.Join(home, LogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return slog.New(slog.DiscardHandler), func() {}
	}
	return slog.New(slog.NewTextHandler(f, nil)), func() { f.Close() }
}

func stateDirOf(name string) string {
	dir, err := lab.StateDir(name)
	if err != nil {
		return ""
	}
	return dir
}
