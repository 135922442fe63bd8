package workspace

import (
	"context"
	"strconv"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/lessons"
)

// Reset to a step: as each lesson step starts, the workspace takes an etcd
// snapshot of the cluster (lab.SaveStepSnapshot, in a command: the UI never
// waits for it). R, or klab reset --step in another terminal, restores one
// the way an operator restores etcd (lab.ResetToStep) and the workspace
// reopens on that step.

// snapshotTimeout bounds one step snapshot; resetTimeout one reset, which
// stops and starts every component.
const (
	snapshotTimeout = 30 * time.Second
	resetTimeout    = 3 * time.Minute
)

// resetPoll is how often the workspace looks for a reset made by klab reset.
const resetPoll = 500 * time.Millisecond

// snapshots are the steps whose snapshot this lesson run holds: a step's
// snapshot is taken the first time it starts, not again on coming back to
// it, so that going back to a step and resetting finds the cluster as the
// step first found it.
type snapshots struct {
	taken map[string]bool
	// resetting is set while a reset runs; seen is when the last reset
	// this workspace reopened after (or made) finished.
	resetting bool
	seen      time.Time
}

// stepSnapshotMsg says how a step's snapshot went.
type stepSnapshotMsg struct {
	step string
	err  error
}

// resetDoneMsg reports a reset the workspace made.
type resetDoneMsg struct {
	index int
	res   *lab.RestoreResult
	info  *lab.Info
	err   error
}

// resetPollMsg carries the last reset recorded in the state dir.
type resetPollMsg struct {
	reset *lab.LessonReset
	info  *lab.Info
}

// stepSnapshot takes the step's snapshot, unless this run holds one.
func (m *Model) stepSnapshot(lesson, step string) tea.Cmd {
	if !m.opts.StepSnapshots || m.info == nil || m.snaps.taken[step] || m.snaps.resetting {
		return nil
	}
	if m.snaps.taken == nil {
		m.snaps.taken = map[string]bool{}
	}
	m.snaps.taken[step] = true
	name := m.info.Name
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), snapshotTimeout)
		defer cancel()
		_, err := lab.SaveStepSnapshot(ctx, name, lesson, step)
		return stepSnapshotMsg{step: step, err: err}
	}
}

// stepSnapshotDone notes a snapshot that failed: the step takes one again
// when it next starts, and a reset to it says there is none.
func (m *Model) stepSnapshotDone(msg stepSnapshotMsg) {
	if msg.err != nil {
		delete(m.snaps.taken, msg.step)
	}
}

// resetDialog asks which step to reset the cluster to: the steps up to the
// one shown, the cursor on it.
func (m *Model) resetDialog() *dialog {
	l := m.pane.Lesson()
	var options []string
	for i, st := range l.Steps[:m.pane.Index()+1] {
		label := strconv.Itoa(i+1) + ". " + st.Title.String()
		if _, ok := lab.StepSnapshot(m.info.Name, l.ID, st.ID); !ok {
			label += "  (" + i18n.T("ui.ws.reset-no-snapshot") + ")"
		}
		options = append(options, label)
	}
	return chooser("ui.dlg.reset", "reset", options, m.pane.Index())
}

// resetTo resets the cluster to the start of step i.
func (m *Model) resetTo(i int) tea.Cmd {
	if m.snaps.resetting || m.info == nil {
		return nil
	}
	l := m.pane.Lesson()
	st := l.Steps[i]
	m.snaps.resetting = true
	m.busy("ui.act.resetting", m.info.Name, i+1, st.Title.String())
	name, lesson, step := m.info.Name, l.ID, st.ID
	var later []string
	for _, s := range l.Steps[i+1:] {
		later = append(later, s.ID)
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), resetTimeout)
		defer cancel()
		res, err := lab.ResetToStep(ctx, name, lesson, step, later)
		info, _ := lab.LoadInfo(name)
		return resetDoneMsg{index: i, res: res, info: info, err: err}
	}
}

func (m *Model) resetDone(msg resetDoneMsg) tea.Cmd {
	m.snaps.resetting = false
	// The reset was recorded before this: the poll must not reopen the
	// step a second time.
	m.snaps.seen = time.Now()
	if msg.err != nil {
		m.status = status{err: msg.err}
		return nil
	}
	return m.reopen(msg.index, msg.res, msg.info)
}

// reopen shows step i again after the cluster was reset to its start: the
// later steps' snapshots are gone with the history they recorded, and the
// step's own is not taken again (the cluster is that snapshot now).
func (m *Model) reopen(i int, res *lab.RestoreResult, info *lab.Info) tea.Cmd {
	l := m.pane.Lesson()
	if m.snaps.taken == nil {
		m.snaps.taken = map[string]bool{}
	}
	for j, st := range l.Steps {
		if j > i {
			delete(m.snaps.taken, st.ID)
		}
	}
	m.snaps.taken[l.Steps[i].ID] = true
	if info != nil {
		m.info = info
	}
	// What the lesson knew of the cluster is of the history undone: the
	// evaluator starts empty and the feed lists and watches the restored
	// cluster afresh, as the API servers and controllers do.
	m.eval = lessons.NewEvaluator()
	var feed tea.Cmd
	if m.feed != nil && m.opts.StartFeed != nil && m.ctx != nil {
		m.feed.Close()
		m.feed = m.opts.StartFeed(m.ctx, m.info)
		feed = waitFeed(m.feed)
	}
	cmd := tea.Batch(m.beginStep(i), feed)
	if res != nil {
		m.status = status{msg: i18n.M("ui.ws.reset", i+1, l.Steps[i].Title, res.Elapsed.Round(10*time.Millisecond).String(), res.ClusterID, res.Term)}
	}
	return tea.Batch(cmd, m.components())
}

// startResetPoll begins looking for the resets klab reset records.
func (m *Model) startResetPoll() tea.Cmd {
	if !m.opts.StepSnapshots || m.info == nil {
		return nil
	}
	m.snaps.seen = time.Now()
	return m.pollReset()
}

func (m *Model) pollReset() tea.Cmd {
	name := m.info.Name
	return tea.Tick(resetPoll, func(time.Time) tea.Msg {
		r, _ := lab.ReadLessonReset(name)
		var info *lab.Info
		if r != nil {
			info, _ = lab.LoadInfo(name)
		}
		return resetPollMsg{reset: r, info: info}
	})
}

// resetPolled reopens the step a reset made elsewhere went back to.
func (m *Model) resetPolled(msg resetPollMsg) tea.Cmd {
	if m.closing || m.closed {
		return nil
	}
	next := m.pollReset()
	r := msg.reset
	if r == nil || m.snaps.resetting || !r.At.After(m.snaps.seen) {
		return next
	}
	m.snaps.seen = r.At
	if m.pane == nil || r.Lesson != m.pane.Lesson().ID {
		return next
	}
	_, i := m.pane.Lesson().Step(r.Step)
	if i < 0 {
		return next
	}
	return tea.Batch(next, m.reopen(i, r.Result, msg.info))
}
