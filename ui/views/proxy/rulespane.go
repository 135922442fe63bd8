package proxy

import (
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/ui/common"
)

// rulesTitle heads the rules: whose, where, in which tool's format, what
// changed and which rows show.
func (v *View) rulesTitle(w, rowsH, total int) string {
	s := v.c.Styles
	svc := v.current()
	if svc == nil {
		return ""
	}
	parts := []string{s.Proxy.Title.Render(i18n.T("ui.proxy.rules.title", svc.key(), v.nodeName(), toolOf(v.mode())))}
	if v.diff != nil {
		added, removed := diffCounts(v.diff)
		changed := i18n.T("ui.proxy.rules.changed", v.changedAt.Format(timeFormat), added, removed)
		if v.whole {
			changed = i18n.T("ui.proxy.rules.changed-all", v.changedAt.Format(timeFormat), added, removed)
		}
		parts = append(parts, s.Proxy.Busy.Render(changed))
	}
	if total > rowsH && rowsH > 0 {
		from := clampScroll(v.scroll, rowsH, total)
		parts = append(parts, s.Proxy.Muted.Render(i18n.T("ui.proxy.rules.rows", from+1, min(from+rowsH, total), total)))
	}
	line := common.JoinFitting(parts, w, s.Proxy.Muted.Render(" · "))
	if fill := w - common.Width(line) - 1; fill > 0 {
		line += " " + s.Proxy.Rule.Render(strings.Repeat("─", fill))
	}
	return line
}

// ruleRows is every row of the selected Service's rules at width w: the
// diff after a change, else the rules; long rules wrapped.
func (v *View) ruleRows(w int) []string {
	s := v.c.Styles
	svc := v.current()
	say := func(style lipgloss.Style, text string) []string {
		var out []string
		for _, l := range common.Pack(strings.Fields(text), w, " ") {
			out = append(out, style.Render(l))
		}
		return out
	}
	switch {
	case svc == nil:
		return nil
	case !svc.proxied():
		return say(s.Proxy.Muted, i18n.T("ui.proxy.rules.not-proxied"))
	case !v.fetched && v.rulesErr != nil:
		return say(s.Proxy.Bad, i18n.Localize(v.rulesErr, i18n.Current()))
	case !v.fetched:
		return say(s.Proxy.Muted, i18n.T("ui.proxy.rules.fetching", v.nodeName()))
	case v.diff != nil && !v.whole:
		return v.diffRows(w)
	case len(v.shown) == 0:
		return say(s.Proxy.Muted, i18n.T("ui.proxy.rules.none", svc.key(), v.nodeName()))
	}
	var out []string
	for _, l := range v.shown {
		out = append(out, wrap(expandTabs(l), w, ruleIndent)...)
	}
	return out
}

// diffRows draws the diff: + added, - removed, unchanged context, and the
// folded runs.
func (v *View) diffRows(w int) []string {
	s := v.c.Styles
	var out []string
	for _, d := range v.diff {
		prefix, style := "  ", s.Proxy.Muted
		switch d.op {
		case lineFolded:
			out = append(out, s.Proxy.Muted.Render(common.Fit("  "+i18n.T("ui.proxy.rules.folded", d.folded), w)))
			continue
		case lineFoldedRemoved:
			out = append(out, s.Proxy.Removed.Render(common.Fit("- "+i18n.T("ui.proxy.rules.folded-removed", d.folded), w)))
			continue
		case lineAdded:
			prefix, style = "+ ", s.Proxy.Added
		case lineRemoved:
			prefix, style = "- ", s.Proxy.Removed
		}
		for i, row := range wrap(expandTabs(d.text), w-2, ruleIndent) {
			if i > 0 {
				prefix = "  "
			}
			out = append(out, style.Render(prefix+row))
		}
	}
	return out
}

// expandTabs turns nft's tab indentation into two spaces a level, which
// keeps its shape in less room.
func expandTabs(s string) string { return strings.ReplaceAll(s, "\t", "  ") }
