package workspace

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
)

// Autoplay plays a lesson for a room: each step's solution is typed into
// the command line at a reading pace and run, the check awaited, and the
// next step begun after a pause. A question waits for the presenter (the
// room answers aloud); A pauses and resumes; n and N move as ever and
// autoplay goes on from there; : pauses it so that the presenter can type,
// and A hands back.

// The pace of autoplay.
const (
	// autoTypeBeat is the time per character typed: about 30 a second, as a
	// fluent typist and slow enough to read along.
	autoTypeBeat = 35 * time.Millisecond
	// autoBeforeRun is the pause between a line typed and it running,
	// and autoBetween the one after a command's output before the next.
	autoBeforeRun = 600 * time.Millisecond
	autoBetween   = 1500 * time.Millisecond
	// autoNextStep is how long a passed step stays before the next one.
	autoNextStep = 4 * time.Second
	// autoAwaitAtMost bounds the wait for a check after the solution ran.
	autoAwaitAtMost = 3 * time.Minute
)

// autoPace scales autoplay's pauses; tests play fast.
var autoPace = 1.0

// autoPhase is where autoplay is in a step.
type autoPhase int

const (
	autoBegin autoPhase = iota // the step shown is yet to be played
	autoAsk                    // a question waits for the presenter
	autoType                   // typing command cmd
	autoRun                    // command cmd runs
	autoAwait                  // the solution ran; the check is awaited
	autoNext                   // the step passed; the next one follows
	autoDone                   // the last step passed
)

type autoplay struct {
	on, paused bool
	// gen numbers autoplay's states: a tick of an older one is stale.
	gen   int
	phase autoPhase
	cmd   int // the solution command typed or run
	typed int // its characters typed so far
}

// autoTickMsg moves autoplay on, unless a newer state made it stale.
type autoTickMsg struct{ gen int }

func (m *Model) autoTick(d time.Duration) tea.Cmd {
	m.auto.gen++
	gen := m.auto.gen
	d = time.Duration(float64(d) * autoPace)
	return tea.Tick(d, func(time.Time) tea.Msg { return autoTickMsg{gen: gen} })
}

// Autoplaying reports whether autoplay is on and not paused.
func (m *Model) Autoplaying() bool { return m.auto.on && !m.auto.paused }

// startAutoplay plays the lesson from the step shown.
func (m *Model) startAutoplay() tea.Cmd {
	if m.pane == nil {
		return nil
	}
	m.auto = autoplay{on: true, gen: m.auto.gen}
	m.status = status{msg: i18n.M("ui.auto.started")}
	return m.autoStep()
}

// toggleAutoplay starts, pauses or resumes autoplay (the A key).
func (m *Model) toggleAutoplay() tea.Cmd {
	switch {
	case !m.auto.on:
		return m.startAutoplay()
	case !m.auto.paused && m.auto.phase == autoAsk:
		// The room has answered: on with the act.
		m.status = status{msg: i18n.M("ui.auto.resumed")}
		return m.autoCommands()
	case !m.auto.paused:
		m.pauseAutoplay("ui.auto.paused")
		return nil
	}
	m.auto.paused = false
	m.status = status{msg: i18n.M("ui.auto.resumed")}
	if m.auto.phase == autoAsk {
		// Handed back at a question: it still waits for the room.
		m.status = status{msg: i18n.M("ui.auto.ask")}
		return nil
	}
	return m.autoResume()
}

// pauseAutoplay stops autoplay where it is, saying why.
func (m *Model) pauseAutoplay(why string) {
	if !m.auto.on || m.auto.paused {
		return
	}
	m.auto.paused = true
	m.auto.gen++
	m.status = status{msg: i18n.M(why)}
}

// autoStep begins autoplay's work on the step shown: its question first,
// if it has one not yet settled, then its solution.
func (m *Model) autoStep() tea.Cmd {
	if !m.auto.on {
		return nil
	}
	m.auto.gen++
	m.auto.cmd, m.auto.typed = 0, 0
	st := m.pane.Step()
	if m.pane.Verdict().Passed {
		return m.autoPassed()
	}
	if st.Predict != nil {
		m.auto.phase = autoAsk
		m.status = status{msg: i18n.M("ui.auto.ask")}
		return nil
	}
	return m.autoCommands()
}

// autoCommands types the next solution command, or awaits the check when
// none is left.
func (m *Model) autoCommands() tea.Cmd {
	if m.auto.cmd < len(m.pane.Step().Solution) {
		m.auto.phase, m.auto.typed = autoType, 0
		return m.autoTick(autoTypeBeat)
	}
	m.auto.phase = autoAwait
	m.status = status{msg: i18n.M("ui.auto.awaiting")}
	return m.autoTick(autoAwaitAtMost)
}

// autoPassed follows a passed step: the next one after a pause, or the
// end.
func (m *Model) autoPassed() tea.Cmd {
	if m.pane.Last() {
		m.auto.phase = autoDone
		m.auto.on = false
		m.status = status{msg: i18n.M("ui.auto.done", m.pane.Lesson().Title)}
		return nil
	}
	m.auto.phase = autoNext
	return m.autoTick(autoNextStep)
}

// autoResume goes on from the phase autoplay paused in.
func (m *Model) autoResume() tea.Cmd {
	switch m.auto.phase {
	case autoBegin:
		return m.autoStep()
	case autoType:
		return m.autoTick(autoTypeBeat)
	case autoRun:
		if m.cmdline.Running() {
			return nil // the command's end moves autoplay on
		}
		m.auto.cmd++
		return m.autoCommands()
	case autoAwait:
		if m.pane.Verdict().Passed {
			return m.autoPassed()
		}
		return m.autoTick(autoAwaitAtMost)
	case autoNext:
		return m.autoTick(0)
	}
	return nil
}

// autoTicked moves autoplay on one beat.
func (m *Model) autoTicked(msg autoTickMsg) tea.Cmd {
	if !m.Autoplaying() || msg.gen != m.auto.gen || m.pane == nil {
		return nil
	}
	// A step on another shape: autoplay recreates a cluster it owns, as
	// the presenter would, and goes on once it is back. Any other dialog
	// waits for the presenter.
	if d := m.dialog; d != nil {
		if d.action == "reshape" && !d.elsewhere {
			return m.recreate(d.shape)
		}
		return m.autoTick(time.Second)
	}
	switch m.auto.phase {
	case autoType:
		line := m.pane.Step().Solution[m.auto.cmd].String()
		runes := []rune(line)
		if m.auto.typed < len(runes) {
			m.auto.typed++
			m.cmdline.Preview(string(runes[:m.auto.typed]))
			m.layout()
			if m.auto.typed == len(runes) {
				return m.autoTick(autoBeforeRun)
			}
			return m.autoTick(autoTypeBeat)
		}
		m.auto.phase = autoRun
		m.pane.ShowSolution()
		run := m.cmdline.Show(line)
		m.layout()
		return run
	case autoAwait:
		if !m.pane.Verdict().Passed {
			m.pauseAutoplay("ui.auto.stuck")
		}
	case autoNext:
		return m.beginStep(m.pane.Index() + 1)
	}
	return nil
}

// autoCommandDone follows a command's end: the next one after a pause.
func (m *Model) autoCommandDone() tea.Cmd {
	if !m.Autoplaying() || m.auto.phase != autoRun {
		return nil
	}
	m.auto.cmd++
	if m.auto.cmd < len(m.pane.Step().Solution) {
		m.auto.phase, m.auto.typed = autoType, 0
		return m.autoTick(autoBetween)
	}
	return m.autoCommands()
}

// autoVerdict follows a passed check.
func (m *Model) autoVerdict() tea.Cmd {
	if !m.Autoplaying() || m.auto.phase == autoNext || m.auto.phase == autoDone {
		return nil
	}
	// Still typing or running: the rest of the solution would do nothing
	// new; the room sees the step pass.
	return m.autoPassed()
}
