package proxy

import (
	"slices"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// nextMode is the mode m switches to: the next in the order the lessons
// introduce them, round again after the last.
func nextMode(current string) string {
	if current == "" {
		current = lab.DefaultProxyMode
	}
	i := slices.Index(proxier.ModeNames, current)
	return proxier.ModeNames[(i+1)%len(proxier.ModeNames)]
}

// canSend reports whether t can send traffic now: to a Service kube-proxy
// proxies, when no burst is running.
func (v *View) canSend() bool {
	svc := v.current()
	return v.cluster != nil && svc != nil && svc.proxied() && len(svc.Ports) > 0 && (v.burst == nil || v.burst.done)
}

// handleKey handles a key press while the view is shown.
func (v *View) handleKey(msg tea.KeyMsg) tea.Cmd {
	k := v.c.Keys
	switch {
	case key.Matches(msg, k.Up, k.Down):
		if i := slices.IndexFunc(v.services, func(s service) bool { return s.key() == v.selected }); i >= 0 {
			if key.Matches(msg, k.Up) && i > 0 {
				v.selectService(v.services[i-1].key())
			} else if key.Matches(msg, k.Down) && i < len(v.services)-1 {
				v.selectService(v.services[i+1].key())
			}
		}
		return nil

	case key.Matches(msg, k.Left, k.Right):
		if len(v.nodes) < 2 || v.cluster == nil {
			return nil
		}
		step := 1
		if key.Matches(msg, k.Left) {
			step = len(v.nodes) - 1
		}
		v.node = (v.node + step) % len(v.nodes)
		v.rules, v.rulesErr, v.fetched = "", nil, false
		v.diff, v.whole, v.scroll, v.shown, v.shownFor = nil, false, 0, nil, ""
		return v.follow()

	case key.Matches(msg, k.PageUp, k.PageDown):
		l := v.layout()
		page := max(l.rulesH-1, 1)
		if key.Matches(msg, k.PageUp) {
			page = -page
		}
		v.scroll = clampScroll(clampScroll(v.scroll, l.rulesH, len(l.rulesRows))+page, l.rulesH, len(l.rulesRows))
		return nil

	case key.Matches(msg, k.Select):
		if v.diff == nil {
			return nil
		}
		v.whole, v.scroll = !v.whole, 0
		return nil

	case key.Matches(msg, k.Mode):
		if v.cluster == nil || v.switching != "" {
			return nil
		}
		v.switching = nextMode(v.mode())
		v.outcome = nil
		return switchMode(v.ctx, v.epoch, v.cluster, v.switching)

	case key.Matches(msg, k.Traffic):
		if !v.canSend() {
			return nil
		}
		svc := v.current()
		v.run++
		v.burst = newBurst(svc.key(), v.nodeName(), burstRequests)
		return sendTraffic(v.ctx, v.run, v.cluster, lab.TrafficOptions{
			Namespace: svc.Namespace, Service: svc.Name, Node: v.nodeName(),
			Count: burstRequests, Concurrency: burstConcurrency,
		})
	}
	return nil
}

// Typing reports false: the Proxy view takes no text.
func (v *View) Typing() bool { return false }

// ShortHelp lists the keys that do something now.
func (v *View) ShortHelp() []key.Binding {
	k := v.c.Keys
	var out []key.Binding
	if len(v.services) > 1 {
		out = append(out, k.Up, k.Down)
	}
	if len(v.nodes) > 1 && v.cluster != nil {
		b := k.Left
		b.SetHelp(b.Help().Key, i18n.T("ui.proxy.key.node"))
		out = append(out, b)
	}
	if v.diff != nil {
		b := k.Select
		if v.whole {
			b.SetHelp(b.Help().Key, i18n.T("ui.proxy.key.changes"))
		} else {
			b.SetHelp(b.Help().Key, i18n.T("ui.proxy.key.all-rules"))
		}
		out = append(out, b)
	}
	if l := v.layout(); len(l.rulesRows) > l.rulesH {
		out = append(out, k.PageUp, k.PageDown)
	}
	if v.cluster != nil && v.switching == "" {
		out = append(out, k.Mode)
	}
	if v.canSend() {
		out = append(out, k.Traffic)
	}
	return out
}

// FullHelp lists the keys that do something now, as one group.
func (v *View) FullHelp() [][]key.Binding { return [][]key.Binding{v.ShortHelp()} }
