package proxy

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/ui/common"
)

// serviceLines is the list of Services, scrolled to keep the selected one
// in sight.
func (v *View) serviceLines(w, h int) []string {
	s := v.c.Styles
	out := []string{s.Proxy.Title.Render(common.Fit(i18n.T("ui.proxy.services", len(v.services)), w))}
	rows := h - 1
	if rows <= 0 {
		return out[:min(h, 1)]
	}
	sel := 0
	for i := range v.services {
		if v.services[i].key() == v.selected {
			sel = i
		}
	}
	start := max(0, min(sel-rows/2, len(v.services)-rows))
	for i := start; i < min(start+rows, len(v.services)); i++ {
		svc := &v.services[i]
		if i == sel {
			out = append(out, s.Proxy.Selected.Render(common.Fit("▸ "+svc.key(), w)))
			continue
		}
		style := s.Proxy.Value
		if !svc.proxied() {
			style = s.Proxy.Muted
		}
		out = append(out, style.Render(common.Fit("  "+svc.key(), w)))
	}
	return out
}

// endpointLines lists the selected Service's endpoints: ✓ ready, ✗ not.
func (v *View) endpointLines(w, h int) []string {
	s := v.c.Styles
	svc := v.current()
	if svc == nil || h <= 0 {
		return nil
	}
	eps := svc.Endpoints
	out := []string{s.Proxy.Title.Render(common.Fit(i18n.T("ui.proxy.endpoints", len(eps), svc.readyEndpoints()), w))}
	if len(eps) == 0 {
		return append(out, s.Proxy.Muted.Render(common.Fit(i18n.T("ui.proxy.no-endpoints"), w)))
	}
	podW, ipW := 0, 0
	for _, e := range eps {
		podW, ipW = max(podW, common.Width(e.Pod)), max(ipW, common.Width(e.IP))
	}
	podW = min(podW, max(w/2-2, 8))
	rows := h - 1
	shown := eps
	if len(eps) > rows {
		shown = eps[:max(rows-1, 0)]
	}
	for _, e := range shown {
		mark, style := "✓", s.Proxy.Good
		state := ""
		switch {
		case e.Terminating:
			mark, style, state = "✗", s.Proxy.Busy, i18n.T("ui.proxy.ep.terminating")
		case !e.Ready:
			mark, style, state = "✗", s.Proxy.Bad, i18n.T("ui.proxy.ep.not-ready")
		}
		pod := e.Pod
		if pod == "" {
			pod = "-"
		}
		line := style.Render(mark) + " " + common.Pad(pod, podW) + "  " + common.Pad(e.IP, ipW) + "  " + s.Proxy.Muted.Render(e.Node)
		if state != "" {
			line += " " + style.Render(state)
		}
		out = append(out, common.Fit(line, w))
	}
	if len(shown) < len(eps) && rows > 0 {
		out = append(out, s.Proxy.Muted.Render(common.Fit(i18n.T("ui.proxy.more", len(eps)-len(shown)), w)))
	}
	return out
}

// chartLines is the last burst of traffic: a bar per pod that answered,
// one per stage where requests failed, with counts and shares of the
// requests finished so far, then which modes handled them.
func (v *View) chartLines(w, h int) []string {
	s := v.c.Styles
	svc := v.current()
	b := v.burst
	if h <= 0 || svc == nil {
		return nil
	}
	if b == nil {
		out := []string{s.Proxy.Title.Render(common.Fit(i18n.T("ui.proxy.chart.title"), w))}
		hint := i18n.T("ui.proxy.chart.hint", burstRequests, svc.key(), v.nodeName())
		if !svc.proxied() {
			hint = i18n.T("ui.proxy.chart.no-traffic")
		}
		for _, l := range common.Pack(strings.Fields(hint), w, " ") {
			out = append(out, s.Proxy.Muted.Render(l))
		}
		return out[:min(len(out), h)]
	}

	title := i18n.T("ui.proxy.chart.done", b.received, b.service, b.node)
	if !b.done {
		title = i18n.T("ui.proxy.chart.sending", b.received, b.count, b.service, b.node)
	}
	out := []string{s.Proxy.Title.Render(common.Fit(title, w))}

	type row struct {
		label string
		count int
		style lipgloss.Style
	}
	var rows []row
	for _, p := range b.pods {
		rows = append(rows, row{p.pod, p.count, s.Proxy.Bar})
	}
	for _, f := range b.failures {
		rows = append(rows, row{"✗ " + i18n.T("ui.proxy.chart.failed", f.stage), f.count, s.Proxy.FailBar})
	}
	labelW, full := 0, 0
	for _, r := range rows {
		labelW, full = max(labelW, common.Width(r.label)), max(full, r.count)
	}
	labelW = min(labelW, w/2)
	numW := common.Width(" 100  100%")
	barW := w - labelW - numW - 1
	for _, r := range rows {
		share := 0
		if b.received > 0 {
			share = (r.count*100 + b.received/2) / b.received
		}
		line := common.Pad(r.label, labelW) + " "
		if barW >= 4 {
			line += r.style.Render(common.Pad(bar(r.count, full, barW), barW))
		}
		line += fmt.Sprintf("%4d %4d%%", r.count, share)
		out = append(out, common.Fit(line, w))
	}
	if len(rows) == 0 && !b.done {
		out = append(out, s.Proxy.Muted.Render(common.Fit(i18n.T("ui.proxy.chart.waiting"), w)))
	}

	if modes := b.modeNames(); len(modes) > 0 {
		var ms []string
		for _, m := range modes {
			ms = append(ms, fmt.Sprintf("%s ×%d", m, b.modes[m]))
		}
		out = append(out, s.Proxy.Muted.Render(common.Fit(i18n.T("ui.proxy.chart.modes", strings.Join(ms, ", ")), w)))
	}
	for _, f := range b.failures {
		out = append(out, s.Proxy.Bad.Render(common.Fit(f.stage+": "+f.reason, w)))
	}
	if b.err != nil {
		out = append(out, s.Proxy.Bad.Render(common.Fit(i18n.T("ui.proxy.chart.error", i18n.Localize(b.err, i18n.Current())), w)))
	}
	return out[:min(len(out), h)]
}
