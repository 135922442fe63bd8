package scheduler

import (
	"slices"
	"sort"
	"strings"

	"github.com/klab-dev/klab/assets/i18n"
	sched "github.com/klab-dev/klab/cluster/scheduler"
	frameworkruntime "github.com/klab-dev/klab/cluster/scheduler/framework/runtime"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/styles"
)

// shortNames are the in-tree plugins' names cut down for narrow tables.
// The full, upstream names are what a student searches for, so they are
// used whenever the table fits with them.
var shortNames = map[string]string{
	"NodeUnschedulable":               "Unsched",
	"NodeName":                        "Name",
	"TaintToleration":                 "Taint",
	"NodeAffinity":                    "NodeAff",
	"NodePorts":                       "Ports",
	"NodeResourcesFit":                "Fit",
	"PodTopologySpread":               "Spread",
	"InterPodAffinity":                "PodAff",
	"NodeResourcesBalancedAllocation": "Balanced",
	"ImageLocality":                   "Image",
}

// maxShortName bounds the name of a plugin klab does not know, in a
// narrow table.
const maxShortName = 8

func pluginName(name string, short bool) string {
	if !short {
		return name
	}
	if s, ok := shortNames[name]; ok {
		return s
	}
	return common.Fit(name, maxShortName)
}

// Layout of the tables.
const (
	colGap = 2
	// minReasonWidth is the least room the filter grid leaves for the
	// rejection reasons; below it the one-line-per-node form reads better.
	minReasonWidth = 30
)

// verdictMark is a plugin's verdict as one cell: the glyph says it without
// colour (NO_COLOR), the colour says it at a glance.
func verdictMark(s *styles.Styles, verdict string) string {
	switch verdict {
	case frameworkruntime.VerdictPassed:
		return s.Scheduler.Good.Render("✓")
	case frameworkruntime.VerdictRejected:
		return s.Scheduler.Bad.Render("✗")
	case frameworkruntime.VerdictError:
		return s.Scheduler.Bad.Render("!")
	case frameworkruntime.VerdictSkipped:
		return s.Scheduler.Muted.Render("–")
	}
	return s.Scheduler.Muted.Render("·")
}

// rejection is the plugin that turned a node down and its reasons.
func rejection(nf sched.NodeFilter) (plugin, reasons string) {
	for _, v := range nf.Plugins {
		switch v.Verdict {
		case frameworkruntime.VerdictRejected:
			return v.Plugin, strings.Join(v.Reasons, ", ")
		case frameworkruntime.VerdictError:
			return v.Plugin, i18n.T("ui.sched.filter.error", strings.Join(v.Reasons, ", "))
		}
	}
	return "", ""
}

// filterSection is the Filter table of a decision: a row per evaluated
// node, a column per filter plugin, and why a rejected node was rejected.
// When the columns do not fit, each node gets one line saying which plugin
// rejected it.
func filterSection(s *styles.Styles, d *sched.Decision, width int) section {
	sec := section{More: func(n int) string { return s.Scheduler.Muted.Render(i18n.T("ui.sched.more-nodes", n)) }}
	title := s.Scheduler.Title.Render(i18n.T("ui.sched.filter.title")) + s.Scheduler.Muted.Render("  "+i18n.T("ui.sched.filter.count", d.FeasibleNodes, d.EvaluatedNodes, d.NumNodes))
	sec.Head = append(sec.Head, common.Fit(title, width))
	for _, v := range d.PreFilter {
		if v.Verdict == frameworkruntime.VerdictRejected || v.Verdict == frameworkruntime.VerdictError {
			sec.Head = append(sec.Head, common.WrapStyled(s.Scheduler.Bad, i18n.T("ui.sched.filter.prefilter", v.Plugin, strings.Join(v.Reasons, ", ")), width, "")...)
		}
	}
	if len(d.Filter) == 0 {
		if d.NumNodes == 0 {
			sec.Head = append(sec.Head, s.Scheduler.Muted.Render(common.Fit(i18n.T("ui.sched.filter.no-nodes"), width)))
		}
		return sec
	}
	nodes := slices.Clone(d.Filter)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Node < nodes[j].Node })
	var plugins []string
	for _, nf := range nodes {
		for _, v := range nf.Plugins {
			if !slices.Contains(plugins, v.Plugin) {
				plugins = append(plugins, v.Plugin)
			}
		}
	}
	alt := sec
	alt.Head = slices.Clone(sec.Head)
	alt.Rows = groupedFilterRows(s, nodes, width)
	sec.Alt = &alt
	nodeW := common.Width(i18n.T("ui.sched.col.node"))
	for _, nf := range nodes {
		nodeW = max(nodeW, common.Width(nf.Node))
	}

	gridWidth := func(short bool) int {
		w := nodeW
		for _, p := range plugins {
			w += colGap + common.Width(pluginName(p, short))
		}
		return w + colGap + minReasonWidth
	}
	short := gridWidth(false) > width
	if gridWidth(short) > width {
		for _, nf := range nodes {
			sec.Rows = append(sec.Rows, compactFilterRow(s, nf, nodeW, width))
		}
		if len(sec.Rows) > 0 {
			sec.Tail = append(sec.Tail, s.Scheduler.Muted.Render(common.Fit(i18n.T("ui.sched.filter.narrow", gridWidth(true)), width)))
		}
		return sec
	}

	gap := strings.Repeat(" ", colGap)
	header := common.Pad(i18n.T("ui.sched.col.node"), nodeW)
	for _, p := range plugins {
		header += gap + pluginName(p, short)
	}
	header += gap + i18n.T("ui.sched.col.reason")
	sec.Head = append(sec.Head, s.Scheduler.Muted.Render(common.Fit(header, width)))
	for _, nf := range nodes {
		verdicts := map[string]string{}
		for _, v := range nf.Plugins {
			verdicts[v.Plugin] = v.Verdict
		}
		row := common.Pad(nf.Node, nodeW)
		for _, p := range plugins {
			w := common.Width(pluginName(p, short))
			mark := verdictMark(s, verdicts[p])
			row += gap + strings.Repeat(" ", (w-1)/2) + mark + strings.Repeat(" ", w-1-(w-1)/2)
		}
		if nf.Feasible {
			row += gap + s.Scheduler.Good.Render(i18n.T("ui.sched.filter.feasible"))
		} else {
			_, reasons := rejection(nf)
			row += gap + reasons
		}
		sec.Rows = append(sec.Rows, common.Fit(row, width))
	}
	sec.Tail = append(sec.Tail, s.Scheduler.Muted.Render(common.Fit(i18n.T("ui.sched.filter.legend"), width)))
	return sec
}

// compactFilterRow is one node in one line: passed, or the plugin that
// rejected it and why.
func compactFilterRow(s *styles.Styles, nf sched.NodeFilter, nodeW, width int) string {
	return common.Fit(common.Pad(nf.Node, nodeW)+strings.Repeat(" ", colGap)+verdictText(s, nf), width)
}

// verdictText is a node's filter outcome in one phrase: it fits, or which
// plugin rejected it and why.
func verdictText(s *styles.Styles, nf sched.NodeFilter) string {
	if nf.Feasible {
		return s.Scheduler.Good.Render("✓ " + i18n.T("ui.sched.filter.feasible"))
	}
	plugin, reasons := rejection(nf)
	return s.Scheduler.Bad.Render("✗ "+plugin) + ": " + reasons
}

// groupedFilterRows gives one line to each outcome, with the nodes that
// had it: a large or short screen still shows every reason.
func groupedFilterRows(s *styles.Styles, nodes []sched.NodeFilter, width int) []string {
	var texts []string
	members := map[string][]string{}
	for _, nf := range nodes {
		t := verdictText(s, nf)
		if _, ok := members[t]; !ok {
			texts = append(texts, t)
		}
		members[t] = append(members[t], nf.Node)
	}
	out := make([]string, len(texts))
	for i, t := range texts {
		out[i] = common.Fit(t+s.Scheduler.Muted.Render(" · "+strings.Join(members[t], " ")), width)
	}
	return out
}
