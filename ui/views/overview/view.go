// Package overview is the Overview view: the cluster's nodes as boxes,
// each with the components that run on it and their health, whether
// Kubernetes thinks the node Ready, which node holds the kube-scheduler
// and kube-controller-manager leases, the mode its kube-proxy runs in, and
// its pods as a row of glyphs. When boxes do not fit, nodes shrink to one
// line each, in columns, and the nodes in trouble are the ones kept.
package overview

import (
	"context"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/kubestate"
	"github.com/klab-dev/klab/ui/labio"
	"github.com/klab-dev/klab/ui/labstate"
)

// View draws the Overview of a cluster. It follows the cluster's
// Kubernetes side itself (nodes, pods, leases, kube-proxies: kubestate's
// feed) and takes the runtime's reports of the components as the
// workspace asks for them; the etcd members are the workspace's State.
type View struct {
	c             *common.Common
	width, height int
	info          *lab.Info
	st            *labstate.State
	// kube is the Kubernetes side, from its own feed.
	kube *kubestate.State
	// report is the runtime's last report of the components; nil until
	// it answers.
	report []runtime.ComponentInfo

	paint *paint
	cache caches
	// nodes and keys are the buffers of each frame's nodes and their
	// keys, kept to spare the allocations.
	nodes []node
	keys  []nodeKey
	// comps is the report, grouped by node.
	comps struct {
		report []runtime.ComponentInfo
		byNode map[string][]comp
	}
}

var _ common.View = (*View)(nil)

// New returns the Overview of the members st holds.
func New(c *common.Common, st *labstate.State) *View {
	return &View{c: c, st: st, kube: &kubestate.State{}}
}

// SetSize sets the cells the view draws in.
func (v *View) SetSize(width, height int) { v.width, v.height = width, height }

// Start follows the Kubernetes side of the cluster info describes, when it
// has one, until ctx ends.
func (v *View) Start(ctx context.Context, info *lab.Info) tea.Cmd {
	v.info, v.kube, v.report = info, &kubestate.State{}, nil
	if info.Kubeconfig == "" {
		return nil
	}
	return kubestate.Start(ctx, info)
}

// Show does nothing: the Overview follows its feed shown or not.
func (v *View) Show(bool) tea.Cmd { return nil }

// Owns reports whether msg is a message of the Kubernetes feed.
func (v *View) Owns(msg tea.Msg) bool {
	_, ok := msg.(kubestate.UpdateMsg)
	return ok
}

// Update folds the Kubernetes feed's messages and waits for the next, and
// keeps the runtime's reports.
func (v *View) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case kubestate.UpdateMsg:
		v.kube.Apply(msg)
		return msg.Next()
	case labio.ComponentsMsg:
		if msg.Err == nil {
			v.report = msg.Infos
		}
	}
	return nil
}

// Typing reports false: the Overview takes no text.
func (v *View) Typing() bool { return false }

// ShortHelp lists no keys: the Overview only shows.
func (v *View) ShortHelp() []key.Binding { return nil }

// FullHelp lists no keys.
func (v *View) FullHelp() [][]key.Binding { return nil }

// legendMinHeight is the height below which the legend gives its line to
// the nodes.
const legendMinHeight = 14

// View draws the cluster: its etcd members as the workspace observed
// them, its Kubernetes objects as the feed delivered them, its components
// as the runtime last reported them.
func (v *View) View() string {
	info, st, ks, comps := v.info, v.st, v.kube, v.report
	w, h := v.width, v.height
	if w <= 0 || h <= 0 {
		return ""
	}
	if v.paint == nil || v.paint.styles != v.c.Styles {
		v.paint = newPaint(v.c.Styles)
	}
	nodes := v.gather(info, st, ks, comps)
	out := make([]string, 0, h)
	out = append(out, common.Pad(v.summary(info, st, nodes, comps), w), common.Pad(v.kubeLine(ks), w))
	if h >= legendMinHeight {
		if l := v.legend(ks); l != "" {
			out = append(out, common.Pad(l, w))
		}
	}
	out = out[:min(len(out), h)]
	rest := h - len(out)
	area := v.nodeArea(nodes, w, rest)
	blank := strings.Repeat(" ", w)
	if len(area) < rest {
		out = append(out, blank)
	}
	// The node area's lines are exactly w cells already: measuring them
	// again would cost more than drawing them did.
	out = append(out, area...)
	for len(out) < h {
		out = append(out, blank)
	}
	v.cache.endFrame()
	return strings.Join(out[:h], "\n")
}

// summary is the first line: the cluster, its shape and its etcd.
func (v *View) summary(info *lab.Info, st *labstate.State, nodes []node, comps []runtime.ComponentInfo) string {
	s := v.c.Styles
	masters, workers := 0, 0
	for i := range nodes {
		if nodes[i].master {
			masters++
		} else {
			workers++
		}
	}
	name := ""
	switch {
	case info != nil:
		name = info.Name
	case st != nil:
		name = st.Cluster
	}
	parts := []string{s.Overview.NodeTitle.Render(i18n.T("ui.ov.cluster", name))}
	if info != nil {
		parts = append(parts, i18n.T("ui.ov.runtime", info.Runtime))
	}
	parts = append(parts, i18n.N("ui.ov.masters", masters, masters))
	if workers > 0 {
		parts = append(parts, i18n.N("ui.ov.workers", workers, workers))
	}
	if st != nil && len(st.Members) > 0 {
		if l := st.Leader(); l != nil {
			parts = append(parts, s.Role.Leader.Render(i18n.T("ui.raft.sum.leader", l.Name, l.Status.Term)))
		} else {
			parts = append(parts, s.Role.Candidate.Render(i18n.T("ui.raft.sum.no-leader", st.Term())))
		}
		healthy := 0
		for i := range st.Members {
			if st.Members[i].Health() == lab.HealthHealthy {
				healthy++
			}
		}
		style := s.Overview.Healthy
		if healthy < len(st.Members) {
			style = s.Overview.Unhealthy
		}
		parts = append(parts, style.Render(i18n.T("ui.ov.healthy", healthy, len(st.Members))))
	}
	if info != nil && info.LB != nil {
		state := runtime.State("")
		for _, ci := range comps {
			if ci.Ref.Component == runtime.ComponentLB {
				state = ci.State
			}
		}
		parts = append(parts, compGlyph(s, state)+" "+i18n.T("ui.ov.lb"))
	}
	return common.JoinFitting(parts, v.width, v.paint.sep)
}

// kubeLine is the second line: the API server's side, or why there is
// none to show.
func (v *View) kubeLine(ks *kubestate.State) string {
	s := v.c.Styles
	w := v.width
	switch {
	case ks == nil:
		return s.Overview.Muted.Render(common.Fit(i18n.T("ui.ov.kube.waiting"), w))
	case ks.Conn.Stopped && ks.Conn.Err != "":
		return common.JoinFitting([]string{s.Overview.Unhealthy.Render("✗ " + i18n.T("ui.ov.kube.stopped")),
			s.Overview.Muted.Render(ks.Conn.Err)}, w, v.paint.sep)
	case ks.Conn.Stopped:
		return s.Overview.Muted.Render(common.Fit(i18n.T("ui.ov.kube.ended"), w))
	case !ks.Conn.Connected && ks.Conn.Err != "":
		return common.JoinFitting([]string{
			s.Overview.Unhealthy.Render("✗ " + i18n.T("ui.ov.kube.down", ks.Conn.Since.Local().Format("15:04:05"))),
			s.Overview.Muted.Render(ks.Conn.Err)}, w, v.paint.sep)
	case !ks.Conn.Synced:
		return s.Overview.Muted.Render(common.Fit(i18n.T("ui.ov.kube.syncing"), w))
	}
	nodes := ks.Nodes()
	ready := 0
	for i := range nodes {
		if nodes[i].IsReady() {
			ready++
		}
	}
	style := s.Overview.Healthy
	if ready < len(nodes) {
		style = s.Overview.Unhealthy
	}
	parts := []string{style.Render(i18n.T("ui.ov.kube.nodes", ready, len(nodes)))}
	all := ks.AllCounts()
	pods := i18n.T("ui.ov.kube.pods", all.Total())
	for st, n := range all {
		if n > 0 {
			pods += " " + podStyle(s, kubestate.PodStatus(st)).Render(fmt.Sprintf("%s%d", podGlyphs[st], n))
		}
	}
	parts = append(parts, pods)
	if c := ks.Counts(""); c.Total() > 0 {
		parts = append(parts, s.Role.Candidate.Render(i18n.T("ui.ov.kube.unscheduled", c.Total())))
	}
	switch pc := ks.ProxyConfig; {
	case pc.Err != "":
		parts = append(parts, s.Overview.Unhealthy.Render(i18n.T("ui.ov.kube.proxy-config-bad")))
	case pc.Exists:
		parts = append(parts, i18n.T("ui.ov.kube.proxy-mode", pc.Mode))
	}
	return common.JoinFitting(parts, w, v.paint.sep)
}

// legend explains the marks on screen: the star, and the glyph of each
// pod status there are pods in.
func (v *View) legend(ks *kubestate.State) string {
	s := v.c.Styles
	parts := []string{s.Role.Leader.Render("★") + " " + s.Overview.Muted.Render(i18n.T("ui.ov.legend.star"))}
	if ks != nil {
		all := ks.AllCounts()
		for st, n := range all {
			if n > 0 {
				parts = append(parts, v.paint.runs[st][1]+" "+s.Overview.Muted.Render(i18n.T(podWords[st])))
			}
		}
	}
	return common.JoinFitting(parts, v.width, "  ")
}

// Tape records a message of the Kubernetes feed: the projections of the
// objects that changed.
func (v *View) Tape(msg tea.Msg) []byte {
	if m, ok := msg.(kubestate.UpdateMsg); ok {
		return m.Tape()
	}
	return nil
}

// Replay forgets the Kubernetes side and the runtime's report, to draw
// the cluster info describes from tapes.
func (v *View) Replay(info *lab.Info) {
	v.info, v.kube, v.report = info, &kubestate.State{}, nil
}

// Play folds a tape of the Kubernetes feed into the view.
func (v *View) Play(tape []byte) error { return v.kube.Play(tape) }

// Keyframe returns the Kubernetes side as one tape.
func (v *View) Keyframe() []byte { return v.kube.Keyframe() }
