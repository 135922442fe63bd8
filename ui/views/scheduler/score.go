package scheduler

import (
	"fmt"
	"strings"

	"github.com/klab-dev/klab/assets/i18n"
	sched "github.com/klab-dev/klab/cluster/scheduler"
	frameworkruntime "github.com/klab-dev/klab/cluster/scheduler/framework/runtime"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/styles"
)

// scoreLayout is one way to draw the Score table, from the most detailed
// to the narrowest.
type scoreLayout struct {
	// Full cells show raw/normalised/weighted; otherwise weighted only.
	Full  bool
	Short bool
	// Plugins is how many plugin columns show (the rest are left out).
	Plugins int
}

// chosenMark marks the chosen node's row.
const chosenMark = "★ "

// scoreSection is the Score table of a scheduled decision: a row per
// scored node in ranking order (the chosen one first), a column per score
// plugin, and the totals.
func scoreSection(s *styles.Styles, d *sched.Decision, width int) section {
	sec := section{More: func(n int) string { return s.Scheduler.Muted.Render(i18n.T("ui.sched.more-nodes", n)) }}
	title := s.Scheduler.Title.Render(i18n.T("ui.sched.score.title"))
	if d.ScoringSkipped != "" {
		sec.Head = append(sec.Head, common.Fit(title, width))
		skipped := d.ScoringSkipped
		switch skipped {
		case "only one feasible node":
			skipped = i18n.T("ui.sched.score.one-node")
		case "no score plugins":
			skipped = i18n.T("ui.sched.score.no-plugins")
		}
		sec.Head = append(sec.Head, common.Wrap(i18n.T("ui.sched.score.skipped", skipped), width, "")...)
		sec.Tail = chosenLines(s, d, width)
		return sec
	}
	if len(d.Scores) == 0 {
		sec.Head = append(sec.Head, common.Fit(title, width))
		return sec
	}
	plugins := d.Scores[0].Scores
	nodeW := common.Width(i18n.T("ui.sched.col.node"))
	totalW := common.Width(i18n.T("ui.sched.col.total"))
	for _, ns := range d.Scores {
		nodeW = max(nodeW, common.Width(chosenMark+ns.Node))
		totalW = max(totalW, len(fmt.Sprint(ns.TotalScore)))
	}
	header := func(p frameworkruntime.PluginScore, short bool) string {
		return fmt.Sprintf("%s×%d", pluginName(p.Plugin, short), p.Weight)
	}
	cell := func(ps frameworkruntime.PluginScore, full bool) string {
		if full {
			return fmt.Sprintf("%d/%d/%d", ps.Raw, ps.Normalized, ps.Weighted)
		}
		return fmt.Sprint(ps.Weighted)
	}
	colW := func(i int, l scoreLayout) int {
		w := common.Width(header(plugins[i], l.Short))
		for _, ns := range d.Scores {
			if i < len(ns.Scores) {
				w = max(w, common.Width(cell(ns.Scores[i], l.Full)))
			}
		}
		return w
	}
	tableW := func(l scoreLayout) int {
		w := nodeW + colGap + totalW
		for i := 0; i < l.Plugins; i++ {
			w += colGap + colW(i, l)
		}
		return w
	}
	var layout scoreLayout
	for _, l := range []scoreLayout{{true, false, len(plugins)}, {true, true, len(plugins)}, {false, false, len(plugins)}, {false, true, len(plugins)}} {
		layout = l
		if tableW(l) <= width {
			break
		}
	}
	for layout.Plugins > 0 && tableW(layout) > width {
		layout.Plugins--
	}

	legend := i18n.T("ui.sched.score.cells-full")
	if !layout.Full {
		legend = i18n.T("ui.sched.score.cells-weighted")
	}
	sec.Head = append(sec.Head, common.Fit(title+s.Scheduler.Muted.Render("  "+legend), width))
	gap := strings.Repeat(" ", colGap)
	head := common.Pad(i18n.T("ui.sched.col.node"), nodeW)
	for i := 0; i < layout.Plugins; i++ {
		head += gap + common.PadLeft(header(plugins[i], layout.Short), colW(i, layout))
	}
	head += gap + common.PadLeft(i18n.T("ui.sched.col.total"), totalW)
	sec.Head = append(sec.Head, s.Scheduler.Muted.Render(common.Fit(head, width)))
	for _, ns := range d.Scores {
		name := "  " + ns.Node
		if ns.Node == d.Node {
			name = chosenMark + ns.Node
		}
		row := common.Pad(name, nodeW)
		for i := 0; i < layout.Plugins; i++ {
			c := ""
			if i < len(ns.Scores) {
				c = cell(ns.Scores[i], layout.Full)
			}
			row += gap + common.PadLeft(c, colW(i, layout))
		}
		row += gap + common.PadLeft(fmt.Sprint(ns.TotalScore), totalW)
		if ns.Node == d.Node {
			row = s.Scheduler.Chosen.Render(row)
		}
		sec.Rows = append(sec.Rows, common.Fit(row, width))
	}
	if hidden := len(plugins) - layout.Plugins; hidden > 0 {
		sec.Tail = append(sec.Tail, s.Scheduler.Muted.Render(common.Fit(i18n.T("ui.sched.score.hidden", hidden), width)))
	}
	var skipped []string
	for _, v := range d.PreScore {
		if v.Verdict == frameworkruntime.VerdictSkipped {
			skipped = append(skipped, v.Plugin)
		}
	}
	if len(skipped) > 0 {
		sec.Tail = append(sec.Tail, s.Scheduler.Muted.Render(common.Fit(i18n.T("ui.sched.score.prescore-skipped", strings.Join(skipped, ", ")), width)))
	}
	sec.Tail = append(sec.Tail, chosenLines(s, d, width)...)
	return sec
}

// chosenLines say which node was chosen and why that one, and how the
// binding went.
func chosenLines(s *styles.Styles, d *sched.Decision, width int) []string {
	var text string
	switch {
	case d.ScoringSkipped != "":
		text = i18n.T("ui.sched.chosen.only", d.Node)
	case d.TiedNodes > 1:
		text = i18n.T("ui.sched.chosen.tied", d.Node, d.TiedNodes)
	default:
		text = i18n.T("ui.sched.chosen.best", d.Node)
	}
	return common.WrapStyled(s.Scheduler.Chosen, chosenMark+text, width, "")
}
