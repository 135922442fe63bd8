package workspace

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/ui/labio"
	"github.com/klab-dev/klab/ui/labstate"
	"github.com/klab-dev/klab/ui/views/raft"
)

// status is the one line where actions report: what is being done, what
// was done, or what went wrong. It keeps messages and errors unrendered so
// that a language switch re-renders them.
type status struct {
	msg  i18n.Message
	err  error
	busy bool
}

func (s status) text() string {
	switch {
	case s.err != nil:
		return s.err.Error()
	case s.msg.Key != "":
		return s.msg.String()
	}
	return ""
}

func (m *Model) busy(key string, args ...any) {
	m.status = status{msg: i18n.M(key, args...), busy: true}
}

// handleKey routes a key: the command line takes every key while it is
// open, and the view shown while it takes text; otherwise come the
// workspace's own keys (views, lesson steps, focus), then the view's.
func (m *Model) handleKey(msg tea.KeyMsg) tea.Cmd {
	k := m.c.Keys
	if m.cmdline.Active() {
		cmd := m.cmdline.Update(msg)
		if !m.cmdline.Active() {
			m.layout() // esc closed it: the view takes the room back
		}
		return cmd
	}
	if m.rewind != nil && !m.cmdline.Shown() && m.timelineKey(msg) {
		return nil
	}
	if v := m.shownView(); v.Typing() {
		return v.Update(msg)
	}
	switch {
	case m.rewind == nil && key.Matches(msg, k.Timeline):
		m.openTimeline()
		return nil
	case key.Matches(msg, k.Back):
		// esc stops a solution's command still running, or closes its
		// output, before anything else.
		if m.cmdline.Shown() {
			if m.cmdline.Running() {
				m.cmdline.Stop()
				return nil
			}
			m.cmdline.Close()
			m.layout()
			return nil
		}
		// esc closes what the view shown offers to close (an
		// explanation, a filter) before it clears the status line.
		if v := m.shownView(); key.Matches(msg, v.ShortHelp()...) {
			return v.Update(msg)
		}
		m.status = status{}
		return nil
	case key.Matches(msg, k.Command):
		// The presenter takes over; A hands back.
		m.pauseAutoplay("ui.auto.taken-over")
		cmd := m.cmdline.Open("")
		m.layout()
		return cmd
	case key.Matches(msg, k.Focus):
		if m.pane != nil {
			m.focus = 1 - m.focus
		}
		return nil
	case key.Matches(msg, k.Quit):
		if m.lab != nil && m.lab.Owned() {
			m.dialog = quitDialog()
			return nil
		}
		m.Stop()
		return tea.Quit
	}
	for id, b := range map[ViewID]key.Binding{ViewOverview: k.Overview, ViewRaft: k.Raft, ViewScheduler: k.Scheduler, ViewProxy: k.Proxy, ViewEvents: k.Events} {
		if key.Matches(msg, b) && m.views[id] != nil {
			m.view = id
			return nil
		}
	}
	if cmd, ok := m.lessonKey(msg); ok {
		return cmd
	}
	if m.rewind != nil {
		// The rewound view's own keys choose what it shows; what they
		// would ask of the cluster has no cluster to go to.
		if v := m.rewind.views.View(recordNames[m.view]); v != nil {
			v.Update(msg)
		}
		return nil
	}
	return m.shownView().Update(msg)
}

// raftAction does what a key of the Raft view asks of the cluster. An
// action asked for just before a dialog opened or the lab began closing
// is dropped, as its key would have been.
func (m *Model) raftAction(a raft.Action) tea.Cmd {
	if m.lab == nil || m.closing || m.dialog != nil {
		return nil
	}
	speed := lab.SlowdownOf(m.state.Clock().TickInterval)
	switch a {
	case raft.Pause:
		m.busy("ui.act.pausing")
		paused := true
		return labio.Clock(m.lab, "pause", etcd.ClockRequest{Paused: &paused})
	case raft.Resume:
		m.busy("ui.act.resuming")
		paused := false
		return labio.Clock(m.lab, "resume", etcd.ClockRequest{Paused: &paused})
	case raft.Step:
		m.busy("ui.act.stepping")
		return labio.Clock(m.lab, "step", etcd.ClockRequest{Step: 1})
	case raft.Slower:
		return m.setSpeed(speed + 1)
	case raft.Faster:
		return m.setSpeed(speed - 1)
	case raft.Kill:
		m.busy("ui.act.killing")
		return labio.Chaos(m.lab, "kill", lab.ChaosRequest{Op: lab.OpKill, Targets: []string{lab.TargetLeader}})
	case raft.Partition:
		var names []string
		cursor := 0
		for i := range m.state.Members {
			names = append(names, m.state.Members[i].Name)
			if &m.state.Members[i] == m.state.Leader() {
				cursor = i
			}
		}
		m.dialog = chooser("ui.dlg.partition", "partition", names, cursor)
		return nil
	case raft.Heal:
		m.busy("ui.act.healing")
		return labio.Chaos(m.lab, "heal", lab.ChaosRequest{Op: lab.OpHeal})
	case raft.Restart:
		names := raft.Restartable(m.state)
		if len(names) == 1 {
			return m.restart(names[0])
		}
		m.dialog = chooser("ui.dlg.restart", "restart", names, 0)
		return nil
	case raft.Write:
		m.writes++
		key := fmt.Sprintf("klab/demo/%d", m.writes)
		m.busy("ui.act.writing", key)
		return labio.Put(m.lab, key, time.Now().UTC().Format(time.RFC3339Nano))
	}
	return nil
}

func (m *Model) setSpeed(i int) tea.Cmd {
	i = max(0, min(i, len(lab.Slowdowns)-1))
	ms := float64((lab.BaseTick * time.Duration(lab.Slowdowns[i])).Milliseconds())
	m.busy("ui.act.speed", speedFactor(i))
	return labio.Clock(m.lab, "speed", etcd.ClockRequest{TickIntervalMS: &ms})
}

func speedFactor(i int) string {
	if lab.Slowdowns[i] == 1 {
		return "1×"
	}
	return fmt.Sprintf("1/%d×", lab.Slowdowns[i])
}

func (m *Model) restart(name string) tea.Cmd {
	m.busy("ui.act.restarting", name)
	ref := runtime.Ref{Node: name, Component: runtime.ComponentEtcd}
	return labio.Chaos(m.lab, "restart", lab.ChaosRequest{Op: lab.OpRestart, Targets: []string{ref.String()}})
}

func (m *Model) partition(name string) tea.Cmd {
	m.busy("ui.act.partitioning", name)
	return labio.Chaos(m.lab, "partition", lab.ChaosRequest{Op: lab.OpPartition, Targets: []string{name}})
}

// actionDone reports how an action ended and follows it up: the state
// learns about partitions, and a restarted member gets the clock the
// others run on.
func (m *Model) actionDone(msg labio.ActionMsg) tea.Cmd {
	if msg.Err != nil {
		m.status = status{err: msg.Err}
		return m.components()
	}
	var cmds []tea.Cmd
	switch msg.Action {
	case "pause":
		m.status = status{msg: i18n.M("ui.done.paused")}
	case "resume":
		m.status = status{msg: i18n.M("ui.done.resumed")}
	case "step":
		m.status = status{msg: i18n.M("ui.done.stepped")}
	case "speed":
		m.status = status{msg: i18n.M("ui.done.speed")}
	case "write":
		m.status = status{msg: i18n.M("ui.done.wrote", msg.Key)}
	case "kill":
		t := msg.Chaos.Targets[0]
		m.status = status{msg: i18n.M("ui.done.killed", t.String(), msg.Chaos.LeaderTerm)}
		cmds = append(cmds, m.components())
	case "restart":
		m.status = status{msg: i18n.M("ui.done.restarted", msg.Chaos.Targets[0].String())}
		cmds = append(cmds, m.components(), m.syncClock())
	case "partition":
		m.state.Partitions = append(m.state.Partitions, labstate.Partition{Side: msg.Chaos.Side, From: msg.Chaos.From})
		m.status = status{msg: i18n.M("ui.done.partitioned", strings.Join(msg.Chaos.Side, ", "), strings.Join(msg.Chaos.From, ", "))}
	case "heal":
		m.state.Partitions = nil
		m.status = status{msg: i18n.M("ui.done.healed")}
	}
	return tea.Batch(cmds...)
}

// syncClock gives every member the clock the running ones have: a member
// started again runs on the default clock (1×, not paused).
func (m *Model) syncClock() tea.Cmd {
	c := m.state.Clock()
	if c.TickInterval == 0 || c.TickInterval == lab.BaseTick && !c.Paused {
		return nil
	}
	ms := float64(c.TickInterval.Milliseconds())
	paused := c.Paused
	return labio.Clock(m.lab, "sync", etcd.ClockRequest{TickIntervalMS: &ms, Paused: &paused})
}
