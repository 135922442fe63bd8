package overview

import (
	"fmt"
	"strings"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/labstate"
	"github.com/klab-dev/klab/ui/views/raft"
)

// detail is how much a node's box says. Each level drops what matters
// least, so that a short screen loses the least.
type detail int

const (
	// detailFull says everything.
	detailFull detail = iota
	// detailNoIndexes drops the etcd member's commit and applied indexes.
	detailNoIndexes
	// detailNoAddress drops the node's address and pod CIDR.
	detailNoAddress
	// detailPacked lists the components side by side, not one a line.
	detailPacked
	numDetails
)

// Box sizes, in cells: the text inside (the border and padding add 4),
// and the gap between boxes.
const (
	// minInner fits "✓ controller-manager ★", the longest component line
	// with short names.
	minInner = 22
	// comfortInner fits the components' full names.
	comfortInner = 30
	maxInner     = 40
	boxGap       = 1
)

// boxLines is what one node's box says at the given detail, in lines of
// at most inner cells.
func (v *View) boxLines(n *node, inner int, d detail) []string {
	s := v.c.Styles
	lines := []string{v.titleLine(n, inner)}
	if l := v.notReadyLine(n, inner); l != "" {
		lines = append(lines, l)
	}
	if d < detailNoAddress {
		lines = append(lines, v.addressLines(n, inner)...)
	}
	var packed []string
	for _, c := range n.comps {
		if c.name == runtime.ComponentEtcd && n.member != nil {
			lines = append(lines, v.etcdLine(n.member, inner))
			if d < detailNoIndexes && n.member.HasStatus {
				// Indented under the etcd line in boxes wide enough.
				idx := i18n.T("ui.ov.indexes", n.member.Status.Commit, n.member.Status.Applied)
				if inner >= comfortInner {
					idx = "  " + idx
				}
				lines = append(lines, s.Overview.Muted.Render(common.Fit(idx, inner)))
			}
			continue
		}
		if d >= detailPacked {
			packed = append(packed, v.compTag(n, c, true))
			continue
		}
		lines = append(lines, v.compLine(n, c, inner))
	}
	if len(packed) > 0 {
		lines = append(lines, common.Pack(packed, inner, " ")...)
	}
	if n.synced {
		label := s.Overview.Key.Render(i18n.T("ui.ov.pods-label")) + " "
		lw := common.Width(label)
		row, _ := v.podRow(&n.pods, inner-lw)
		if row == "" {
			row = s.Overview.Muted.Render(i18n.T("ui.ov.no-pods"))
		}
		lines = append(lines, common.Fit(label+row, inner))
	}
	return lines
}

// addressLines are the node's address and pod CIDR: on one line when
// they fit, else on two.
func (v *View) addressLines(n *node, inner int) []string {
	var parts []string
	if n.host != "" {
		parts = append(parts, i18n.T("ui.ov.address", n.host))
	}
	if n.cidr != "" {
		parts = append(parts, i18n.T("ui.ov.pod-cidr", n.cidr))
	}
	if len(parts) == 0 {
		return nil
	}
	muted := v.c.Styles.Overview.Muted
	if joined := strings.Join(parts, " · "); common.Width(joined) <= inner {
		return []string{muted.Render(joined)}
	}
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = muted.Render(common.Fit(p, inner))
	}
	return out
}

// titleLine is the node's name and, on the right, its Ready condition.
func (v *View) titleLine(n *node, inner int) string {
	title := v.c.Styles.Overview.NodeTitle.Render(common.Fit(n.name, inner))
	tw := common.Width(title)
	for _, short := range []bool{false, true} {
		badge := readyBadge(v.c.Styles, n, short)
		if badge == "" {
			break
		}
		if bw := common.Width(badge); tw+1+bw <= inner {
			return title + strings.Repeat(" ", inner-tw-bw) + badge
		}
	}
	return title
}

// notReadyLine says since when a node is not Ready, and why.
func (v *View) notReadyLine(n *node, inner int) string {
	if n.kube == nil || n.kube.IsReady() || n.kube.ReadySince.IsZero() {
		return ""
	}
	parts := []string{i18n.T("ui.ov.since", n.kube.ReadySince.Local().Format("15:04:05"))}
	if n.kube.ReadyReason != "" {
		parts = append(parts, n.kube.ReadyReason)
	}
	return v.c.Styles.Overview.Unhealthy.Render(common.Fit(strings.Join(parts, " · "), inner))
}

// etcdLine is the node's etcd member: its raft role and term, or why it
// has none.
func (v *View) etcdLine(m *labstate.Member, inner int) string {
	s := v.c.Styles
	var glyph string
	switch m.Health() {
	case lab.HealthHealthy:
		glyph = s.Overview.Healthy.Render("✓")
	case lab.HealthPaused:
		glyph = s.Role.Candidate.Render("‖")
	case lab.HealthNoLeader:
		glyph = s.Role.Candidate.Render("?")
	default:
		glyph = s.Overview.Unhealthy.Render("✗")
	}
	head := glyph + " " + s.Overview.Value.Render(runtime.ComponentEtcd) + " "
	role := m.Role()
	if !m.Running() {
		return common.Fit(head+s.RoleStyle(role).Render(i18n.T("ui.role."+role)), inner)
	}
	withRole := head + s.RoleStyle(role).Render(raft.RoleWord(role))
	withTerm := withRole + s.Overview.Muted.Render(" · "+i18n.T("ui.raft.term")+fmt.Sprintf(" %d", m.Status.Term))
	if common.Width(withTerm) <= inner {
		return withTerm
	}
	return common.Fit(withRole, inner)
}

// compLine is one component in a box: whether it runs, its name, and
// what it holds or runs in.
func (v *View) compLine(n *node, c comp, inner int) string {
	head := v.glyphOf(n, c) + " "
	long, short := v.compExtra(n, c)
	for _, name := range []string{c.name, shortName(c.name)} {
		named := head + v.c.Styles.Overview.Value.Render(name)
		for _, extra := range []string{long, short} {
			line := named
			if extra != "" {
				line += " " + extra
			}
			if common.Width(line) <= inner {
				return line
			}
		}
	}
	return common.Fit(head+v.c.Styles.Overview.Value.Render(shortName(c.name))+" "+short, inner)
}

// compExtra is what a component line adds to the name, worded at length
// and in short: a state other than running, the lease a scheduler or
// controller manager holds, the mode a kube-proxy runs.
func (v *View) compExtra(n *node, c comp) (long, short string) {
	s := v.c.Styles
	if c.state != "" && c.state != runtime.StateRunning {
		w := s.Overview.Unhealthy.Render(i18n.T("state." + string(c.state)))
		return w, w
	}
	switch c.name {
	case runtime.ComponentScheduler, runtime.ComponentControllerManager:
		if c.name == runtime.ComponentScheduler && n.sched || c.name == runtime.ComponentControllerManager && n.cm {
			return s.Role.Leader.Render("★ " + i18n.T("ui.ov.lease-holder")), s.Role.Leader.Render("★")
		}
	case runtime.ComponentKubeProxy:
		if !n.hasProxy {
			return "", ""
		}
		if !n.proxy.Reachable {
			w := s.Overview.Unhealthy.Render(i18n.T("ui.ov.proxy-down"))
			return w, w
		}
		long = s.Overview.Value.Render(n.proxy.Mode)
		short = long
		if n.wantMode != "" && n.wantMode != n.proxy.Mode {
			// Switching to the ConfigMap's mode, or failing to.
			long += s.Role.Candidate.Render(" → " + n.wantMode)
			short += s.Role.Candidate.Render("→" + n.wantMode)
		}
		if n.proxy.ConfigError != "" {
			long += s.Overview.Unhealthy.Render(" ⚠")
			short += s.Overview.Unhealthy.Render("⚠")
		}
		return long, short
	}
	return "", ""
}

// compTag is a component in a packed box or a one-line row: glyph and
// short name, the lease mark, a kube-proxy's mode when boxed.
func (v *View) compTag(n *node, c comp, withMode bool) string {
	s := v.c.Styles
	tag := v.glyphOf(n, c) + s.Overview.Value.Render(tagName(c.name))
	if c.state != "" && c.state != runtime.StateRunning {
		return tag
	}
	switch {
	case c.name == runtime.ComponentScheduler && n.sched, c.name == runtime.ComponentControllerManager && n.cm:
		tag += s.Role.Leader.Render("★")
	case c.name == runtime.ComponentKubeProxy && withMode && n.hasProxy && n.proxy.Reachable:
		_, mode := v.compExtra(n, c)
		tag += " " + mode
	}
	return tag
}

// glyphOf marks a component by the runtime's state, or, for a kube-proxy
// the runtime thinks runs, by whether it answers.
func (v *View) glyphOf(n *node, c comp) string {
	if c.name == runtime.ComponentKubeProxy && n.hasProxy && !n.proxy.Reachable &&
		(c.state == "" || c.state == runtime.StateRunning) {
		return v.c.Styles.Overview.Unhealthy.Render("✗")
	}
	return compGlyph(v.c.Styles, c.state)
}

// grid lays the nodes' boxes out perRow to a row, every box of a row as
// tall as the tallest, and returns the lines, each width cells wide.
func (v *View) grid(nodes []*node, perRow, inner, width int, d detail) []string {
	var out []string
	gap := strings.Repeat(" ", boxGap)
	for i := 0; i < len(nodes); i += perRow {
		row := nodes[i:min(i+perRow, len(nodes))]
		tallest := 0
		for j := range row {
			tallest = max(tallest, v.boxHeight(row[j], inner, d))
		}
		boxes := make([][]string, len(row))
		for j := range row {
			n := row[j]
			boxes[j] = v.cache.boxes.get(n.name, boxKey{node: keyOf(n), inner: inner, height: tallest, detail: d}, func() []string {
				return strings.Split(v.c.Styles.Overview.Node.Render(common.Lines(strings.Join(v.boxLines(n, inner, d), "\n"), inner, tallest)), "\n")
			})
		}
		// Each box is inner+4 cells wide: its text, padding and border.
		fill := strings.Repeat(" ", max(0, width-len(row)*(inner+4)-(len(row)-1)*boxGap))
		for l := range boxes[0] {
			var b strings.Builder
			for j := range boxes {
				if j > 0 {
					b.WriteString(gap)
				}
				b.WriteString(boxes[j][l])
			}
			b.WriteString(fill)
			out = append(out, b.String())
		}
	}
	return out
}
