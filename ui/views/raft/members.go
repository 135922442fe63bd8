package raft

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/lipgloss"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/labstate"
	"github.com/klab-dev/klab/ui/styles"
)

// RoleWord returns a role in the current language, with a marker that
// carries the meaning when colours are off (NO_COLOR, a monochrome
// projector).
func RoleWord(role string) string {
	mark := ""
	switch role {
	case labstate.RoleLeader:
		mark = "★ "
	case labstate.RoleCandidate, labstate.RolePreCandidate:
		mark = "? "
	case labstate.RoleFollower:
	default:
		mark = "✗ "
	}
	return mark + i18n.T("ui.role."+role)
}

// memberLines is what one member's box says: its role, term, vote and
// indexes, the leader's progress for it, its log as a strip, and its
// election timer, most important first, so that a short box loses the
// least of it.
func memberLines(s *styles.Styles, sgr *sgrCache, st *labstate.State, m *labstate.Member, inner int, lo uint64) []string {
	role := m.Role()
	lines := []string{s.RoleStyle(role).Render(common.Fit(RoleWord(role), inner))}
	if m.HasStatus && len(m.Status.Alarms) > 0 {
		// An alarm is the cluster's, so every member's box shows it.
		lines = append(lines, common.Fit(sgr.wrap(&s.Raft.Alarm, i18n.T("ui.raft.alarm", strings.Join(uniq(m.Status.Alarms), ","))), inner))
	}
	val := func(key string, v any) string {
		return sgr.wrap(&s.Raft.Key, i18n.T(key)) + " " + sgr.wrap(&s.Raft.Value, fmt.Sprint(v))
	}
	if m.HasStatus {
		vote := i18n.T("ui.raft.none")
		if name := voteName(st, m.Status.Vote); name != "" {
			vote = name
		}
		lines = append(lines, common.Pack([]string{
			val("ui.raft.term", m.Status.Term),
			val("ui.raft.vote", vote),
			val("ui.raft.commit", m.Status.Commit),
			val("ui.raft.applied", m.Status.Applied),
		}, inner, "  ")...)
	}
	if lead := st.Leader(); lead != nil && lead != m {
		if pr, ok := lead.Status.Progress[m.Name]; ok {
			lines = append(lines, common.Pack([]string{
				sgr.wrap(&s.Raft.Key, i18n.T("ui.raft.progress")),
				val("ui.raft.match", pr.Match),
				val("ui.raft.next", pr.Next),
				sgr.wrap(&s.Raft.Value, progressState(pr.State)),
			}, inner, " ")...)
		}
	}
	timer := timerLines(s, sgr, m, inner)
	if m.HasStatus {
		lines = append(lines, logStrip(s, sgr, m, inner, lo, st.MaxLastIndex()))
	}
	lines = append(lines, timer[0])
	if m.HasStatus {
		lines = append(lines, common.Fit(sgr.wrap(&s.Raft.Muted, i18n.T("ui.raft.log-range", m.Status.FirstIndex, m.Status.LastIndex)), inner))
	}
	return append(lines, timer[1:]...)
}

// uniq drops repeated words, keeping the order.
func uniq(words []string) []string {
	var out []string
	for _, w := range words {
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// memberBox frames a member's lines, cut or padded to height, with its
// name in the top border; the leader's frame is highlighted. It returns
// the box's rows, each inner+4 cells wide, or inner+2 when tight (no
// padding). A name too long for the border is shortened to what tells
// the members apart (m-5 for master-5). The frame is drawn here rather
// than by the style's Render, which measures every line of the box again
// and renders each edge apart: five boxes a frame made it most of the
// view's cost. It draws what Render would, the style's border, border
// colour and horizontal padding.
func memberBox(s *styles.Styles, sgr *sgrCache, m *labstate.Member, lines []string, inner, height int, tight bool) []string {
	box := &s.Raft.Box
	if m.Role() == labstate.RoleLeader {
		box = &s.Raft.BoxFocused
	}
	b := box.GetBorderStyle()
	edge := sgr.edge(box)
	padL := strings.Repeat(" ", box.GetPaddingLeft())
	padR := strings.Repeat(" ", box.GetPaddingRight())
	if tight {
		padL, padR = "", ""
	}
	span := inner + len(padL) + len(padR) // the cells between the corners

	name := " " + m.Name + " "
	if common.Width(name) > span-2 {
		name = " " + shortName(m.Name) + " "
		if common.Width(name) > span-2 {
			name = shortName(m.Name)
		}
	}
	title := sgr.wrap(&s.Raft.Title, name)
	tw := common.Width(title)
	if tw > span-2 {
		title = common.Fit(title, span-2)
		tw = common.Width(title)
	}
	rows := make([]string, 0, height+2)
	rows = append(rows, sgr.wrap(edge, b.TopLeft+b.Top)+title+
		sgr.wrap(edge, strings.Repeat(b.Top, max(span-1-tw, 0))+b.TopRight))
	left, right := sgr.wrap(edge, b.Left), sgr.wrap(edge, b.Right)
	for i := range height {
		line := ""
		if i < len(lines) {
			line = lines[i]
		}
		rows = append(rows, left+padL+common.Pad(line, inner)+padR+right)
	}
	rows = append(rows, sgr.wrap(edge, b.BottomLeft+strings.Repeat(b.Bottom, span)+b.BottomRight))
	return rows
}

// shortName shortens a member's name to its first letter and what follows
// its last dash: master-5 is m-5. A name without a dash is kept.
func shortName(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return name
	}
	r, _ := utf8.DecodeRuneInString(name)
	return string(r) + name[i:]
}

// voteName returns the name of the member with the given hex ID, "" for
// none.
func voteName(st *labstate.State, id string) string {
	if id == "" || id == "0" {
		return ""
	}
	for _, m := range st.Members {
		if m.ID == id || m.Status.ID == id {
			return m.Name
		}
	}
	return id
}

// progressState turns raft's progress state into its word.
func progressState(state string) string {
	switch state {
	case "StateProbe":
		return i18n.T("ui.raft.pr.probe")
	case "StateReplicate":
		return i18n.T("ui.raft.pr.replicate")
	case "StateSnapshot":
		return i18n.T("ui.raft.pr.snapshot")
	}
	return state
}

// Log strip cells.
const (
	cellCommitted   = "█"
	cellUncommitted = "▒"
	cellCompacted   = "░"
	cellAbsent      = "·"
)

// logStrip draws the member's log over the window [lo, lo+width) of
// indexes shared by every member, so that a follower that lags shows a
// shorter strip than the leader.
func logStrip(s *styles.Styles, sgr *sgrCache, m *labstate.Member, width int, lo, hi uint64) string {
	// Cells come in runs of one kind; each run is rendered once, since a
	// style's Render is what a frame spends its time on.
	const (
		kindBlank = iota
		kindAbsent
		kindCompacted
		kindCommitted
		kindUncommitted
	)
	cells := [...]string{" ", cellAbsent, cellCompacted, cellCommitted, cellUncommitted}
	kindStyles := [...]*lipgloss.Style{nil, &s.Raft.LogAbsent, &s.Raft.LogCompacted, &s.Raft.LogCommitted, &s.Raft.LogUncommitted}
	var b strings.Builder
	runKind, runLen := -1, 0
	flush := func() {
		if runLen == 0 {
			return
		}
		text := strings.Repeat(cells[runKind], runLen)
		switch {
		case runKind == kindBlank:
			b.WriteString(text)
		case !m.Reachable:
			b.WriteString(sgr.wrap(&s.Raft.Muted, text))
		default:
			b.WriteString(sgr.wrap(kindStyles[runKind], text))
		}
		runLen = 0
	}
	for i := 0; i < width; i++ {
		idx := lo + uint64(i)
		kind := kindAbsent
		switch {
		case idx > hi:
			kind = kindBlank
		case idx > m.Status.LastIndex:
		case idx < m.Status.FirstIndex:
			kind = kindCompacted
		case idx <= m.Status.Commit:
			kind = kindCommitted
		default:
			kind = kindUncommitted
		}
		if kind != runKind {
			flush()
			runKind = kind
		}
		runLen++
	}
	flush()
	return b.String()
}

// timerLines draws the election timer: ticks since the member last heard
// from a leader, against raft's randomised timeout, which falls between
// electionTicks and 2×electionTicks−1.
func timerLines(s *styles.Styles, sgr *sgrCache, m *labstate.Member, width int) []string {
	st := m.Status
	switch {
	case !m.Running():
		return []string{sgr.wrap(&s.Raft.Muted, i18n.T("ui.raft.timer-off"))}
	case m.Role() == labstate.RoleLeader:
		return []string{sgr.wrap(&s.Raft.Muted, common.Fit(i18n.T("ui.raft.heartbeat-every", st.HeartbeatTicks), width))}
	}
	// The library keeps the drawn timeout to itself, so the range is shown.
	lo := st.ElectionTicks
	hi := 2*st.ElectionTicks - 1
	if hi <= 0 {
		return []string{""} // no status yet
	}
	barW := min(width, hi+1)
	filled := min(barW, (st.ElectionElapsed*barW+hi/2)/hi)
	if st.ElectionElapsed >= hi {
		filled = barW
	}
	mark := lo * barW / hi
	// The bar in runs of one style: filled, then empty with the mark of
	// the shortest timeout among them.
	var b strings.Builder
	b.WriteString(sgr.wrap(&s.Raft.TimerFill, strings.Repeat("▮", filled)))
	switch {
	case mark < filled || mark >= barW:
		b.WriteString(sgr.wrap(&s.Raft.TimerEmpty, strings.Repeat("▯", barW-filled)))
	default:
		b.WriteString(sgr.wrap(&s.Raft.TimerEmpty, strings.Repeat("▯", mark-filled)))
		b.WriteString(sgr.wrap(&s.Raft.TimerMark, "┊"))
		b.WriteString(sgr.wrap(&s.Raft.TimerEmpty, strings.Repeat("▯", barW-mark-1)))
	}
	label := i18n.T("ui.raft.timer", st.ElectionElapsed, lo, hi)
	if lo == hi {
		label = i18n.T("ui.raft.timer-fixed", st.ElectionElapsed, hi)
	}
	return []string{b.String(), sgr.wrap(&s.Raft.Muted, common.Fit(label, width))}
}
