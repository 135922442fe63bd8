package raft

import (
	"fmt"
	"strings"

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
func memberLines(s *styles.Styles, st *labstate.State, m *labstate.Member, inner int, lo uint64) []string {
	role := m.Role()
	lines := []string{s.RoleStyle(role).Render(common.Fit(RoleWord(role), inner))}
	val := func(key string, v any) string {
		return s.Raft.Key.Render(i18n.T(key)) + " " + s.Raft.Value.Render(fmt.Sprint(v))
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
				s.Raft.Key.Render(i18n.T("ui.raft.progress")),
				val("ui.raft.match", pr.Match),
				val("ui.raft.next", pr.Next),
				s.Raft.Value.Render(progressState(pr.State)),
			}, inner, " ")...)
		}
	}
	timer := timerLines(s, m, inner)
	if m.HasStatus {
		lines = append(lines, logStrip(s, m, inner, lo, st.MaxLastIndex()))
	}
	lines = append(lines, timer[0])
	if m.HasStatus {
		lines = append(lines, common.Fit(s.Raft.Muted.Render(i18n.T("ui.raft.log-range", m.Status.FirstIndex, m.Status.LastIndex)), inner))
	}
	return append(lines, timer[1:]...)
}

// memberBox frames a member's lines, cut or padded to height, with its
// name in the top border; the leader's frame is highlighted.
func memberBox(s *styles.Styles, m *labstate.Member, lines []string, inner, height int) string {
	box := s.Raft.Box
	if m.Role() == labstate.RoleLeader {
		box = s.Raft.BoxFocused
	}
	body := common.Lines(strings.Join(lines, "\n"), inner, height)
	return titled(box.Render(body), s.Raft.Title.Render(" "+m.Name+" "))
}

// titled writes a title into the top border of a rendered box, after its
// corner, as a tab on a folder.
func titled(box, title string) string {
	nl := strings.IndexByte(box, '\n')
	if nl < 0 {
		return box
	}
	top := box[:nl]
	w := lipgloss.Width(top)
	tw := lipgloss.Width(title)
	if tw > w-4 {
		title = common.Fit(title, w-4)
		tw = lipgloss.Width(title)
	}
	// Cut the top border around the title: its first two cells (corner
	// and one line) stay, the title replaces the cells after them.
	left := cutCells(top, 0, 2)
	right := cutCells(top, 2+tw, w)
	return left + title + right + box[nl:]
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
func logStrip(s *styles.Styles, m *labstate.Member, width int, lo, hi uint64) string {
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
	kindStyles := [...]lipgloss.Style{{}, s.Raft.LogAbsent, s.Raft.LogCompacted, s.Raft.LogCommitted, s.Raft.LogUncommitted}
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
			b.WriteString(s.Raft.Muted.Render(text))
		default:
			b.WriteString(kindStyles[runKind].Render(text))
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
func timerLines(s *styles.Styles, m *labstate.Member, width int) []string {
	st := m.Status
	switch {
	case !m.Running():
		return []string{s.Raft.Muted.Render(i18n.T("ui.raft.timer-off"))}
	case m.Role() == labstate.RoleLeader:
		return []string{s.Raft.Muted.Render(common.Fit(i18n.T("ui.raft.heartbeat-every", st.HeartbeatTicks), width))}
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
	var b strings.Builder
	for i := 0; i < barW; i++ {
		switch {
		case i < filled:
			b.WriteString(s.Raft.TimerFill.Render("▮"))
		case i == mark:
			b.WriteString(s.Raft.TimerMark.Render("┊"))
		default:
			b.WriteString(s.Raft.TimerEmpty.Render("▯"))
		}
	}
	label := i18n.T("ui.raft.timer", st.ElectionElapsed, lo, hi)
	if lo == hi {
		label = i18n.T("ui.raft.timer-fixed", st.ElectionElapsed, hi)
	}
	return []string{b.String(), s.Raft.Muted.Render(common.Fit(label, width))}
}
