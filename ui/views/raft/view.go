// Package raft is the Raft view: every etcd member as a box (role, term,
// vote, commit and applied index, its log, the leader's progress for it,
// its election timer), and under the boxes the raft messages the members
// really send each other, drawn as a live sequence diagram.
package raft

import (
	"context"
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/labstate"
)

// View draws the Raft view of the members st holds, which the workspace
// folds from the Observer's stream. It follows nothing of its own; its
// keys ask the workspace to act on the cluster (ActionMsg).
type View struct {
	c             *common.Common
	width, height int
	st            *labstate.State
}

var _ common.View = (*View)(nil)

// New returns the Raft view of the members st holds.
func New(c *common.Common, st *labstate.State) *View { return &View{c: c, st: st} }

// SetSize sets the cells the view draws in.
func (v *View) SetSize(width, height int) { v.width, v.height = width, height }

// Start does nothing: the members' state is the workspace's to follow.
func (v *View) Start(context.Context, *lab.Info) tea.Cmd { return nil }

// Show does nothing: the view draws what the workspace folds, shown or not.
func (v *View) Show(bool) tea.Cmd { return nil }

// Owns reports false: the view has no source of its own.
func (v *View) Owns(tea.Msg) bool { return false }

// Layout constants.
const (
	boxGap   = 1
	minInner = 8
	// minTight is the least a box holds inside its border once it drops
	// its padding: five members side by side in a lesson's pane at 80
	// columns.
	minTight    = 5
	minLaneRows = 4
	maxNotes    = 8
)

// View draws the members in the view's size.
func (v *View) View() string {
	s, st := v.c.Styles, v.st
	w, h := v.width, v.height
	if w <= 0 || h <= 0 {
		return ""
	}
	n := len(st.Members)
	if n == 0 {
		return common.Lines(s.Raft.Muted.Render(i18n.T("ui.raft.no-members")), w, h)
	}
	out := []string{v.summary(st)}

	// A box is its border, a cell of padding each side and what it holds.
	// Where padded boxes do not fit side by side, they go without the
	// padding rather than run off the view.
	boxW := (w - (n-1)*boxGap) / n
	tight := boxW < minInner+4
	inner := max(boxW-4, minInner)
	if tight {
		inner = max(boxW-2, minTight)
	}
	boxW = inner + 4
	if tight {
		boxW = inner + 2
	}
	hi := st.MaxLastIndex()
	lo := uint64(1)
	if hi > uint64(inner) {
		lo = hi - uint64(inner) + 1
	}
	sgr := newSGRCache()
	contents := make([][]string, n)
	natural := 0
	for i := range st.Members {
		contents[i] = memberLines(s, sgr, st, &st.Members[i], inner, lo)
		natural = max(natural, len(contents[i]))
	}
	// Boxes give way to at least a few rows of messages.
	boxH := max(min(natural, h-1-2-minLaneRows), 1)
	centers := make([]int, n)
	var rows []string
	gap := strings.Repeat(" ", boxGap)
	for i := range st.Members {
		box := memberBox(s, sgr, &st.Members[i], contents[i], inner, boxH, tight)
		if i == 0 {
			rows = box
		} else {
			for y := range rows {
				rows[y] += gap + box[y]
			}
		}
		centers[i] = i*(boxW+boxGap) + boxW/2
	}
	out = append(out, rows...)

	rest := h - len(out)
	if rest >= 8 {
		out = append(out, common.Fit(legend(v), w))
		rest--
	}
	notes := 0
	if rest >= 12 && len(st.Notes) > 0 {
		notes = min(len(st.Notes), rest/3, maxNotes)
	}
	laneRows := rest - notes
	if notes > 0 {
		laneRows-- // the notes' title
	}
	if laneRows >= 5 {
		out = append(out, s.Raft.Muted.Render(common.Fit(i18n.T("ui.raft.messages", labstate.MessageTicks), w)))
		laneRows--
	}
	out = append(out, lanes(s, sgr, st, centers, w, laneRows)...)
	if notes > 0 {
		out = append(out, s.Raft.Muted.Render(common.Fit(i18n.T("ui.raft.notes"), w)))
		shown := st.Notes[len(st.Notes)-notes:]
		whenW := 0
		for _, n := range shown {
			whenW = max(whenW, common.Width(noteWhen(st, n)))
		}
		for _, n := range shown {
			out = append(out, noteLine(v, st, n, whenW+2, w))
		}
	}
	return common.Lines(strings.Join(out, "\n"), w, h)
}

// summary is the view's first line: who leads in which term, the quorum,
// the raft clock and etcd's timings, as many as fit.
func (v *View) summary(st *labstate.State) string {
	s := v.c.Styles
	var lead string
	if l := st.Leader(); l != nil {
		lead = s.Role.Leader.Render(i18n.T("ui.raft.sum.leader", l.Name, l.Status.Term))
	} else {
		lead = s.Role.Candidate.Render(i18n.T("ui.raft.sum.no-leader", st.Term()))
	}
	running := 0
	for i := range st.Members {
		if st.Members[i].Running() {
			running++
		}
	}
	quorum := i18n.T("ui.raft.sum.quorum", st.Quorum(), len(st.Members), running)
	if running < st.Quorum() {
		quorum = s.Role.Down.Render(quorum + " " + i18n.T("ui.raft.sum.no-quorum"))
	}
	parts := []string{lead, quorum, ClockWord(st)}
	if m := anyStatus(st); m != nil {
		parts = append(parts, s.Raft.Muted.Render(i18n.T("ui.raft.sum.timings",
			m.Status.HeartbeatTicks, m.Status.ElectionTicks, m.Status.ElectionTicks, 2*m.Status.ElectionTicks-1)))
	}
	if st.Lost > 0 {
		parts = append(parts, s.Role.Down.Render(i18n.T("ui.raft.sum.lost", st.Lost)))
	}
	return common.JoinFitting(parts, v.width, s.Raft.Muted.Render(" · "))
}

// ClockWord describes the raft clock: paused, or running at a speed, with
// the tick it gives.
func ClockWord(st *labstate.State) string {
	c := st.Clock()
	if c.TickInterval == 0 {
		return ""
	}
	speed := lab.Slowdowns[lab.SlowdownOf(c.TickInterval)]
	factor := "1×"
	if speed > 1 {
		factor = fmt.Sprintf("1/%d×", speed)
	}
	ms := c.TickInterval.Milliseconds()
	switch {
	case c.Mixed:
		return i18n.T("ui.clock.mixed", factor, ms)
	case c.Paused:
		return i18n.T("ui.clock.paused", factor, ms)
	}
	return i18n.T("ui.clock.running", factor, ms)
}

func anyStatus(st *labstate.State) *labstate.Member {
	if l := st.Leader(); l != nil {
		return l
	}
	for i := range st.Members {
		if st.Members[i].Reachable {
			return &st.Members[i]
		}
	}
	return nil
}

func legend(v *View) string {
	s := v.c.Styles
	parts := []string{
		s.Raft.LogCommitted.Render(cellCommitted) + " " + s.Raft.Muted.Render(i18n.T("ui.raft.legend.committed")),
		s.Raft.LogUncommitted.Render(cellUncommitted) + " " + s.Raft.Muted.Render(i18n.T("ui.raft.legend.uncommitted")),
		s.Raft.LogAbsent.Render(cellAbsent) + " " + s.Raft.Muted.Render(i18n.T("ui.raft.legend.absent")),
		s.Raft.LogCompacted.Render(cellCompacted) + " " + s.Raft.Muted.Render(i18n.T("ui.raft.legend.compacted")),
		s.Raft.TimerFill.Render("▮") + " " + s.Raft.Muted.Render(i18n.T("ui.raft.legend.timer")),
		s.Raft.Muted.Render("▶ " + i18n.T("ui.raft.legend.arrived") + "  ▷ " + i18n.T("ui.raft.legend.in-flight") + "  ✗ " + i18n.T("ui.raft.legend.lost")),
	}
	return common.JoinFitting(parts, v.width, "  ")
}

// noteWhen says how long ago, in ticks, a note's event happened.
func noteWhen(st *labstate.State, n labstate.Note) string {
	if age := int(st.Age(n.Tick)); age > 0 {
		return i18n.T("ui.raft.ago", age)
	}
	return i18n.T("ui.raft.just-now")
}

func noteLine(v *View, st *labstate.State, n labstate.Note, whenW, width int) string {
	s := v.c.Styles
	when := noteWhen(st, n)
	role := i18n.T("ui.role." + n.Role)
	var text string
	switch n.Kind {
	case labstate.NoteState:
		text = i18n.T("ui.note.state", n.Member, role, n.Term)
	case labstate.NoteElection:
		text = i18n.T("ui.note.election", n.Member, n.Term)
		if n.Role == labstate.RolePreCandidate {
			text = i18n.T("ui.note.prevote", n.Member, n.Term)
		}
	case labstate.NoteLeader:
		switch n.Leader {
		case "":
			text = i18n.T("ui.note.no-leader", n.Member, n.Term)
		case n.Member:
			text = i18n.T("ui.note.leads", n.Member, n.Term)
		default:
			text = i18n.T("ui.note.follows", n.Member, n.Leader, n.Term)
		}
	case labstate.NoteLifecycle:
		if key := "ui.note.life." + n.Detail; i18n.Current().Has(key) {
			text = i18n.T(key, n.Member)
		} else {
			text = i18n.T("ui.note.life.other", n.Member, n.Detail)
		}
	default:
		text = i18n.T("ui.note.snapshot", n.Member, n.Detail)
	}
	return common.Fit(s.Raft.Muted.Render(common.Pad(when, whenW))+text, width)
}

// Tape records nothing: the members' state is the workspace's, recorded
// as the Observer's stream.
func (v *View) Tape(tea.Msg) []byte { return nil }

// Replay does nothing: the view draws the State it was made with.
func (v *View) Replay(*lab.Info) {}

// Play does nothing: the view has no source of its own.
func (v *View) Play([]byte) error { return nil }

// Keyframe returns nil: the view has no source of its own.
func (v *View) Keyframe() []byte { return nil }
