package overview

import (
	"slices"
	"strings"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/ui/common"
)

// One line a node: when boxes do not fit, each node gets a row of
// columns (name, Ready, components, kube-proxy mode, pods), in as many
// side-by-side blocks as the width allows.
const (
	// minRowWidth is the narrowest block worth splitting the screen for.
	minRowWidth = 56
	maxBlocks   = 4
	blockGap    = 2
	colGap      = 1
	maxNameCol  = 16
)

// row is one node's compact cells, styled, with their widths.
type row struct {
	name, ready, comps, mode     string
	nameW, readyW, compsW, modeW int
}

func (v *View) row(n *node) row {
	s := v.c.Styles
	var r row
	r.name = s.Overview.NodeTitle.Render(common.Fit(n.name, maxNameCol))
	r.ready = readyBadge(s, n, false)
	var tags []string
	if m := n.member; m != nil {
		etcd := s.Overview.Value.Render(runtime.ComponentEtcd)
		switch {
		case !m.Running():
			etcd = s.Overview.Unhealthy.Render("✗" + runtime.ComponentEtcd)
		case m.Role() == "leader":
			etcd += s.Role.Leader.Render("★")
		}
		tags = append(tags, etcd)
	}
	healthy := true
	for _, c := range n.comps {
		if c.name == runtime.ComponentEtcd && n.member != nil {
			continue
		}
		down := c.state != "" && c.state != runtime.StateRunning ||
			c.name == runtime.ComponentKubeProxy && n.hasProxy && !n.proxy.Reachable
		lease := c.name == runtime.ComponentScheduler && n.sched || c.name == runtime.ComponentControllerManager && n.cm
		if down || lease {
			tags = append(tags, v.compTag(n, c, false))
		}
		healthy = healthy && !down && c.state != ""
	}
	if len(tags) == 0 && healthy {
		tags = append(tags, s.Overview.Healthy.Render("✓"))
	}
	r.comps = strings.Join(tags, " ")
	if n.hasProxy && n.proxy.Mode != "" {
		style := s.Overview.Value
		switch {
		case !n.proxy.Reachable:
			style = s.Overview.Muted
		case n.wantMode != "" && n.wantMode != n.proxy.Mode || n.proxy.ConfigError != "":
			style = s.Role.Candidate
		}
		r.mode = style.Render(n.proxy.Mode)
	}
	r.nameW, r.readyW = common.Width(r.name), common.Width(r.ready)
	r.compsW, r.modeW = common.Width(r.comps), common.Width(r.mode)
	return r
}

// rows draws nodes one line each in at most width×height cells (each line
// exactly width cells wide): a line
// of column titles, then the nodes. When they do not all fit, the nodes
// in trouble are shown first, and a last line counts the rest.
func (v *View) rows(nodes []*node, width, height int) []string {
	if height <= 0 || len(nodes) == 0 {
		return nil
	}
	if height == 1 {
		return []string{common.Pad(v.moreLine(nodes, width), width)}
	}
	avail := height - 1
	blocks := 1
	if len(nodes) > avail {
		fit := max(1, min(maxBlocks, (width+blockGap)/(minRowWidth+blockGap)))
		blocks = min(fit, (len(nodes)+avail-1)/avail)
	}
	shown := nodes
	var hidden []*node
	if len(nodes) > blocks*avail {
		avail = height - 2
		shown, hidden = pick(nodes, blocks*avail)
	}
	if avail <= 0 {
		return []string{common.Pad(v.moreLine(nodes, width), width)}
	}
	blockW := (width - (blocks-1)*blockGap) / blocks
	rs := make([]row, len(shown))
	keys := v.keys[:0]
	for i, n := range shown {
		keys = append(keys, keyOf(n))
		rs[i] = v.cache.cells.get(n.name, keys[i], func() row { return v.row(n) })
	}
	v.keys = keys
	cols := v.columns(rs, blockW)
	per := (len(rs) + blocks - 1) / blocks
	// Every cell is exactly blockW wide, so the lines' widths are known
	// without measuring them again.
	out := make([]string, 0, height)
	head := common.Pad(v.header(cols, blockW), blockW)
	gap := strings.Repeat(" ", blockGap)
	var line strings.Builder
	line.WriteString(head)
	for range blocks - 1 {
		line.WriteString(gap)
		line.WriteString(head)
	}
	line.WriteString(strings.Repeat(" ", width-blocks*blockW-(blocks-1)*blockGap))
	out = append(out, line.String())
	for i := range per {
		line.Reset()
		used := 0
		for b := range blocks {
			j := b*per + i
			if j >= len(rs) {
				break
			}
			if b > 0 {
				line.WriteString(gap)
				used += blockGap
			}
			n := shown[j]
			line.WriteString(v.cache.rows.get(n.name, rowKey{node: keys[j], cols: cols, width: blockW}, func() string {
				return common.Pad(v.rowLine(&rs[j], n, cols, blockW), blockW)
			}))
			used += blockW
		}
		line.WriteString(strings.Repeat(" ", width-used))
		out = append(out, line.String())
	}
	if len(hidden) > 0 {
		out = append(out, common.Pad(v.moreLine(hidden, width), width))
	}
	return out
}

// pick chooses which n nodes to show: masters and nodes in trouble
// first, then the others in order; the chosen keep their order.
func pick(nodes []*node, n int) (shown, hidden []*node) {
	keep := make([]bool, len(nodes))
	count := 0
	for pass := 0; pass < 2 && count < n; pass++ {
		for i := range nodes {
			if count == n {
				break
			}
			if !keep[i] && (pass == 1 || nodes[i].master || nodes[i].trouble()) {
				keep[i] = true
				count++
			}
		}
	}
	for i := range nodes {
		if keep[i] {
			shown = append(shown, nodes[i])
		} else {
			hidden = append(hidden, nodes[i])
		}
	}
	return shown, hidden
}

// colWidths are the widths of the compact columns; 0 drops one.
type colWidths struct{ name, ready, comps, mode, pods int }

// columns sizes the columns to their widest cell, giving the pods what is
// left, and drops the least telling columns when too little is.
func (v *View) columns(rs []row, width int) colWidths {
	var c colWidths
	c.name = common.Width(i18n.T("ui.ov.col.node"))
	c.ready = common.Width(i18n.T("ui.ov.col.status"))
	c.comps = common.Width(i18n.T("ui.ov.col.components"))
	c.mode = common.Width(i18n.T("ui.ov.col.proxy"))
	for i := range rs {
		c.name = max(c.name, rs[i].nameW)
		c.ready = max(c.ready, rs[i].readyW)
		c.comps = max(c.comps, rs[i].compsW)
		c.mode = max(c.mode, rs[i].modeW)
	}
	c.comps = min(c.comps, max(width/3, 8))
	const minPods = 6
	rest := func() int { return width - c.name - c.ready - c.comps - c.mode - 4*colGap }
	for _, drop := range []*int{&c.comps, &c.mode, &c.ready} {
		if rest() >= minPods {
			break
		}
		*drop = 0
	}
	c.pods = max(rest(), 0)
	return c
}

func (v *View) header(c colWidths, width int) string {
	cells := []struct {
		key string
		w   int
	}{{"ui.ov.col.node", c.name}, {"ui.ov.col.status", c.ready}, {"ui.ov.col.components", c.comps},
		{"ui.ov.col.proxy", c.mode}, {"ui.ov.col.pods", c.pods}}
	var b strings.Builder
	for i, cell := range cells {
		if cell.w == 0 {
			continue
		}
		if i > 0 {
			b.WriteString(strings.Repeat(" ", colGap))
		}
		b.WriteString(common.Pad(i18n.T(cell.key), cell.w))
	}
	return v.c.Styles.Overview.Key.Render(common.Fit(strings.TrimRight(b.String(), " "), width))
}

func (v *View) rowLine(r *row, n *node, c colWidths, width int) string {
	var b strings.Builder
	b.WriteString(common.Pad(r.name, c.name))
	cell := func(s string, sw, w int) {
		if w == 0 {
			return
		}
		b.WriteString(strings.Repeat(" ", colGap))
		if sw > w {
			s, sw = common.Fit(s, w), w
		}
		b.WriteString(s)
		b.WriteString(strings.Repeat(" ", w-sw))
	}
	cell(r.ready, r.readyW, c.ready)
	cell(r.comps, r.compsW, c.comps)
	cell(r.mode, r.modeW, c.mode)
	if c.pods > 0 {
		pods, _ := v.podRow(&n.pods, c.pods)
		b.WriteString(strings.Repeat(" ", colGap))
		b.WriteString(pods)
	}
	return common.Fit(b.String(), width)
}

// moreLine counts the nodes left out, and how many of them are Ready.
func (v *View) moreLine(hidden []*node, width int) string {
	ready := 0
	for i := range hidden {
		if hidden[i].kube != nil && hidden[i].kube.IsReady() {
			ready++
		}
	}
	text := i18n.T("ui.ov.more-nodes", len(hidden))
	if slices.ContainsFunc(hidden, func(n *node) bool { return n.synced }) {
		text = i18n.T("ui.ov.more-nodes-ready", len(hidden), ready)
	}
	return v.c.Styles.Overview.Muted.Render(common.Fit(text, width))
}
