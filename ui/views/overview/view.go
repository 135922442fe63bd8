// Package overview is the Overview view: the cluster's nodes as boxes,
// each with the components that run on it and their health. Only what
// klab runs today is drawn: master nodes and their etcd members.
package overview

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/labstate"
	"github.com/klab-dev/klab/ui/views/raft"
)

// View draws the Overview of a cluster.
type View struct {
	c             *common.Common
	width, height int
}

// New returns the Overview.
func New(c *common.Common) *View { return &View{c: c} }

// SetSize sets the cells the view draws in.
func (v *View) SetSize(width, height int) { v.width, v.height = width, height }

const (
	nodeInner = 30
	nodeGap   = 2
)

// Render draws the nodes of info as st observes them.
func (v *View) Render(info *lab.Info, st *labstate.State) string {
	s := v.c.Styles
	w, h := v.width, v.height
	if w <= 0 || h <= 0 {
		return ""
	}
	out := []string{v.summary(info, st), ""}
	for _, l := range common.Pack(strings.Fields(i18n.T("ui.ov.control-plane")), w, " ") {
		out = append(out, s.Overview.Muted.Render(l))
	}

	// As many node boxes to a row as fit, at least one, narrower when
	// even one would not fit.
	boxW := min(nodeInner+4, w)
	perRow := max(1, (w+nodeGap)/(boxW+nodeGap))
	inner := boxW - 4
	// Every box gets as many lines as the tallest, so rows line up.
	contents := make([][]string, len(st.Members))
	tallest := 0
	for i := range st.Members {
		contents[i] = v.nodeLines(info, &st.Members[i], inner)
		tallest = max(tallest, len(contents[i]))
	}
	var boxes []string
	for _, lines := range contents {
		boxes = append(boxes, s.Overview.Node.Render(common.Lines(strings.Join(lines, "\n"), inner, tallest)))
	}
	for i := 0; i < len(boxes); i += perRow {
		row := boxes[i:min(i+perRow, len(boxes))]
		var parts []string
		for j, b := range row {
			if j > 0 {
				parts = append(parts, strings.Repeat(" ", nodeGap))
			}
			parts = append(parts, b)
		}
		out = append(out, strings.Split(lipgloss.JoinHorizontal(lipgloss.Top, parts...), "\n")...)
	}
	if info != nil && info.Spec.Workers > 0 {
		out = append(out, "", s.Overview.Muted.Render(common.Fit(i18n.T("ui.ov.workers-not-yet", info.Spec.Workers), w)))
	}
	return common.Lines(strings.Join(out, "\n"), w, h)
}

func (v *View) summary(info *lab.Info, st *labstate.State) string {
	s := v.c.Styles
	healthy := 0
	for i := range st.Members {
		if st.Members[i].Health() == lab.HealthHealthy {
			healthy++
		}
	}
	parts := []string{s.Overview.NodeTitle.Render(i18n.T("ui.ov.cluster", st.Cluster))}
	if info != nil {
		parts = append(parts, i18n.T("ui.ov.runtime", info.Runtime))
	}
	parts = append(parts, i18n.T("ui.ov.masters", len(st.Members)))
	if l := st.Leader(); l != nil {
		parts = append(parts, s.Role.Leader.Render(i18n.T("ui.raft.sum.leader", l.Name, l.Status.Term)))
	} else {
		parts = append(parts, s.Role.Candidate.Render(i18n.T("ui.raft.sum.no-leader", st.Term())))
	}
	style := s.Overview.Healthy
	if healthy < len(st.Members) {
		style = s.Overview.Unhealthy
	}
	parts = append(parts, style.Render(i18n.T("ui.ov.healthy", healthy, len(st.Members))))
	return common.JoinFitting(parts, v.width, s.Overview.Muted.Render(" · "))
}

// nodeLines is what one master node's box says: its name, health and
// address, then its components.
func (v *View) nodeLines(info *lab.Info, m *labstate.Member, inner int) []string {
	s := v.c.Styles
	health := m.Health()
	healthStyle := s.Overview.Healthy
	mark := "✓ "
	if health != lab.HealthHealthy {
		healthStyle, mark = s.Overview.Unhealthy, "✗ "
	}
	title := s.Overview.NodeTitle.Render(m.Name)
	badge := healthStyle.Render(mark + i18n.T("ui.health."+health))
	gap := max(1, inner-lipgloss.Width(title)-lipgloss.Width(badge))
	lines := []string{title + strings.Repeat(" ", gap) + badge}

	if n := nodeOf(info, m.Name); n != nil {
		lines = append(lines, s.Overview.Muted.Render(i18n.T("ui.ov.address", n.Host)))
	}
	role := m.Role()
	etcdLine := s.Overview.Key.Render("etcd ") + s.RoleStyle(role).Render(raft.RoleWord(role))
	if m.Running() {
		etcdLine += s.Overview.Muted.Render(" · " + i18n.T("ui.raft.term") + fmt.Sprintf(" %d", m.Status.Term))
	}
	lines = append(lines, etcdLine)
	if m.HasStatus {
		lines = append(lines, s.Overview.Muted.Render(i18n.T("ui.ov.indexes", m.Status.Commit, m.Status.Applied)))
	}
	if m.Runtime != "" && m.Runtime != runtime.StateRunning {
		lines = append(lines, s.Overview.Unhealthy.Render(i18n.T("ui.ov.component-state", string(m.Runtime))))
	}
	return lines
}

func nodeOf(info *lab.Info, name string) *runtime.Node {
	if info == nil {
		return nil
	}
	for i := range info.Nodes {
		if info.Nodes[i].Name == name {
			return &info.Nodes[i]
		}
	}
	return nil
}
