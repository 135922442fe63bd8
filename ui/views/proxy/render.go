package proxy

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
	corev1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/proxy/proxier"
	"github.com/klab-dev/klab/ui/common"
)

// Layout: the Service and its kube-proxy on top; then the Services, the
// endpoints and the traffic chart side by side when they fit (on two rows
// when not); the rules take the rest of the height, since they are what
// the view is about.
const (
	wideWidth = 110
	colSep    = " │ "
	// ruleIndent is how far a wrapped rule's next rows are indented.
	ruleIndent = 4
	timeFormat = "15:04:05"
)

// layout is the view cut to its size.
type layout struct {
	head       []string
	blocks     []string // the Services, endpoints and chart
	rulesTitle string
	rulesRows  []string // every row of the rules, to scroll through
	rulesH     int      // how many of them show
}

// column is a block of lines width cells wide.
type column struct {
	lines []string
	width int
}

// View draws the view.
func (v *View) View() string {
	w, h := v.width, v.height
	if w <= 0 || h <= 0 {
		return ""
	}
	if msg, style, ok := v.placeholder(); ok {
		var out []string
		for _, l := range strings.Split(msg, "\n") {
			out = append(out, common.Pack(strings.Fields(l), w, " ")...)
		}
		for i := range out {
			out[i] = style.Render(out[i])
		}
		return common.Lines(strings.Join(out, "\n"), w, h)
	}
	l := v.layout()
	out := append(append([]string{}, l.head...), l.blocks...)
	out = append(out, l.rulesTitle)
	from := clampScroll(v.scroll, l.rulesH, len(l.rulesRows))
	out = append(out, l.rulesRows[from:min(from+l.rulesH, len(l.rulesRows))]...)
	return common.Lines(strings.Join(out, "\n"), w, h)
}

// placeholder is what the view says while it has no Service to show.
func (v *View) placeholder() (string, lipgloss.Style, bool) {
	muted := v.c.Styles.Proxy.Muted
	switch {
	case v.err != nil:
		return i18n.T("ui.proxy.err.watch", i18n.Localize(v.err, i18n.Current())), v.c.Styles.Proxy.Bad, true
	case v.cluster == nil && !v.listed:
		// A replayed view has no cluster, only what was listed.
		return i18n.T("ui.proxy.connecting"), muted, true
	case !v.listed:
		return i18n.T("ui.proxy.listing"), muted, true
	case len(v.services) == 0:
		return i18n.T("ui.proxy.no-services") + "\n\n" + exampleService, muted, true
	}
	return "", muted, false
}

// exampleService is what a student can type at the command line to have
// a Service to look at.
const exampleService = "kubectl create deployment web --image klab/app:v1 --replicas 3\n" +
	"kubectl expose deployment web --port 80 --target-port 8080 --type NodePort"

// clampScroll keeps a scroll offset within total rows of which rowsH
// show.
func clampScroll(s, rowsH, total int) int { return max(0, min(s, total-rowsH)) }

// layout cuts the view to its size.
func (v *View) layout() layout {
	w, h := v.width, v.height
	l := layout{head: v.headLines(w)}
	avail := h - len(l.head) - 1 // the rules' title
	sep := common.Width(colSep)
	natural := func(f func(int, int) []string, width int) int { return len(f(width, h)) }
	if w >= wideWidth {
		svcW := min(max(w/5, 22), 36)
		rest := w - svcW - 2*sep
		epW := rest / 2
		chartW := rest - epW
		topH := max(natural(v.serviceLines, svcW), natural(v.endpointLines, epW), natural(v.chartLines, chartW))
		topH = min(topH, max(avail*2/5, 3))
		l.blocks = v.columns(topH, column{v.serviceLines(svcW, topH), svcW},
			column{v.endpointLines(epW, topH), epW}, column{v.chartLines(chartW, topH), chartW})
	} else {
		svcW := min(max(w/3, 16), 30)
		epW := w - svcW - sep
		topH := min(max(natural(v.serviceLines, svcW), natural(v.endpointLines, epW)), max(avail/4, 2))
		chartH := min(natural(v.chartLines, w), max(avail/4, 2))
		l.blocks = v.columns(topH, column{v.serviceLines(svcW, topH), svcW}, column{v.endpointLines(epW, topH), epW})
		l.blocks = append(l.blocks, v.chartLines(w, chartH)...)
	}
	l.rulesH = max(h-len(l.head)-len(l.blocks)-1, 0)
	l.rulesRows = v.ruleRows(w)
	l.rulesTitle = v.rulesTitle(w, l.rulesH, len(l.rulesRows))
	return l
}

// columns lays blocks side by side, height rows tall.
func (v *View) columns(height int, cols ...column) []string {
	sep := v.c.Styles.Proxy.Rule.Render(colSep)
	out := make([]string, height)
	for i := range out {
		var b strings.Builder
		for j, c := range cols {
			if j > 0 {
				b.WriteString(sep)
			}
			line := ""
			if i < len(c.lines) {
				line = c.lines[i]
			}
			b.WriteString(common.Pad(line, c.width))
		}
		out[i] = b.String()
	}
	return out
}

// headLines says which Service and which kube-proxy the view shows, and
// how the last action went.
func (v *View) headLines(w int) []string {
	s := v.c.Styles
	dot := s.Proxy.Muted.Render(" · ")
	var out []string
	if svc := v.current(); svc != nil {
		parts := []string{s.Proxy.Title.Render(svc.key())}
		if svc.Type != corev1.ServiceTypeClusterIP {
			parts = append(parts, string(svc.Type))
		}
		if !svc.headless() {
			parts = append(parts, "ClusterIP "+svc.ClusterIP)
		}
		if len(svc.Ports) > 0 {
			parts = append(parts, i18n.T("ui.proxy.ports", portList(svc)))
		}
		if why := notProxied(svc); why != "" {
			parts = append(parts[:1], s.Proxy.Bad.Render(why))
		}
		out = append(out, common.JoinFitting(parts, w, dot))
	}

	node := v.nodeName()
	parts := []string{s.Proxy.Title.Render(i18n.T("ui.proxy.node", node, v.node+1, len(v.nodes)))}
	if st := v.nodeStatus(); st != nil {
		mode := i18n.T("ui.proxy.mode", st.Mode)
		if st.Mode == proxier.ModeIPVS {
			mode = i18n.T("ui.proxy.mode-ipvs", st.IPVSScheduler)
		}
		parts = append(parts, s.Proxy.Value.Bold(true).Render(mode),
			i18n.T("ui.proxy.synced", st.Rules, st.LastSync.At.Format(timeFormat)))
		var others []string
		for _, np := range v.statuses {
			if np.Status != nil && np.Status.Mode != st.Mode {
				others = append(others, np.Node+" "+np.Status.Mode)
			}
		}
		if len(others) > 0 {
			parts = append(parts, s.Proxy.Busy.Render(i18n.T("ui.proxy.mixed", strings.Join(others, ", "))))
		}
	}
	switch {
	case v.rulesErr != nil:
		parts = append(parts, s.Proxy.Bad.Render(i18n.Localize(v.rulesErr, i18n.Current())))
	case v.streamErr != nil:
		parts = append(parts, s.Proxy.Muted.Render(i18n.T("ui.proxy.no-stream", i18n.Localize(v.streamErr, i18n.Current()))))
	}
	out = append(out, common.JoinFitting(parts, w, dot))

	var action []string
	switch {
	case v.switching != "":
		action = append(action, s.Proxy.Busy.Render(i18n.T("ui.proxy.switching", v.switching)))
	case v.outcome != nil && v.outcome.failed:
		action = append(action, s.Proxy.Bad.Render(v.outcome.text()))
	case v.outcome != nil:
		action = append(action, s.Proxy.Good.Render(v.outcome.text()))
	}
	if st := v.nodeStatus(); st != nil && st.ConfigError != "" {
		action = append(action, s.Proxy.Bad.Render(i18n.T("ui.proxy.config-error", st.ConfigError)))
	}
	if len(action) > 0 {
		out = append(out, common.Fit(strings.Join(action, dot), w))
	}
	return out
}

// portList writes a Service's ports as kubectl get svc does, with the
// port on the pods: 80:30080/TCP→8080.
func portList(svc *service) string {
	var ps []string
	for _, p := range svc.Ports {
		s := strconv.Itoa(int(p.Port))
		if p.NodePort != 0 {
			s += ":" + strconv.Itoa(int(p.NodePort))
		}
		proto := string(p.Protocol)
		if proto == "" {
			proto = "TCP"
		}
		s += "/" + proto
		if t := p.TargetPort.String(); t != "" && t != "0" && t != strconv.Itoa(int(p.Port)) {
			s += "→" + t
		}
		ps = append(ps, s)
	}
	return strings.Join(ps, ", ")
}

// notProxied says why kube-proxy programs nothing for a Service, "" when
// it does.
func notProxied(svc *service) string {
	switch {
	case svc.Type == corev1.ServiceTypeExternalName:
		return i18n.T("ui.proxy.svc.external-name")
	case svc.headless():
		return i18n.T("ui.proxy.svc.headless")
	case svc.OtherProxy != "":
		return i18n.T("ui.proxy.svc.other-proxy", svc.OtherProxy)
	}
	return ""
}
