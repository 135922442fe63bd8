package scheduler

import (
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/styles"
)

// look names the styles the view draws with by what they mean here. The
// Styles struct has no Scheduler group yet; until it has, the view borrows
// the Overview's and the Raft view's, in this one place.
type look struct {
	Title, Text, Muted, Good, Bad, Warn, Chosen, Selected lipgloss.Style
}

func lookOf(s *styles.Styles) look {
	return look{
		Title: s.Overview.NodeTitle, Text: s.Overview.Value, Muted: s.Overview.Muted,
		Good: s.Overview.Healthy, Bad: s.Overview.Unhealthy, Warn: s.Home.Warning,
		Chosen: s.Role.Leader, Selected: s.Dialog.ItemSelected,
	}
}

// padLeft fits s to exactly width cells, aligned right.
func padLeft(s string, width int) string {
	s = common.Fit(s, width)
	if w := common.Width(s); w < width {
		s = strings.Repeat(" ", width-w) + s
	}
	return s
}

// wrap breaks plain text into lines of at most width cells at spaces,
// each line starting with indent, which counts in the width.
func wrap(text string, width int, indent string) []string {
	lines := common.Pack(strings.Fields(text), max(width-common.Width(indent), 8), " ")
	if len(lines) == 0 {
		return []string{indent}
	}
	for i := range lines {
		lines[i] = indent + lines[i]
	}
	return lines
}

// clock is the time of day of t, as the tables show it.
func clock(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return ""
	}
	return t.In(loc).Format("15:04:05")
}
