package events

import (
	"strconv"
	"strings"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/apiserver"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/styles"
)

// Layout.
const (
	// maxRequestColumn bounds a request column's natural width: a service
	// account's user name runs to fifty cells.
	maxRequestColumn = 24
	// maxAuthzColumn bounds the authorization column's: a binding's kind
	// and name.
	maxAuthzColumn = 48
	// paneChrome is a pane's title and header lines.
	paneChrome = 2
	// markerWidth is the selection marker before each event row.
	markerWidth = 2
)

// split returns the heights of the upper and lower panes and whether the
// filter line shows.
func (v *View) split() (upper, lower int, filterLine bool) {
	h := v.height
	if v.editing {
		filterLine = true
		h--
	}
	upper = max((h*11+19)/20, paneChrome+1) // a little over half
	lower = max(h-upper, 0)
	return upper, lower, filterLine
}

// eventRows is how many events the upper pane shows.
func (v *View) eventRows() int {
	upper, _, _ := v.split()
	return max(upper-paneChrome, 1)
}

// View draws the view.
func (v *View) View() string {
	w, h := v.width, v.height
	if w <= 0 || h <= 0 {
		return ""
	}
	s := v.c.Styles
	if !v.started {
		out := []string{s.Events.Title.Render(i18n.T("ui.events.title")), ""}
		out = append(out, common.Wrap(i18n.T("ui.events.no-cluster"), w, "")...)
		return common.Lines(strings.Join(out, "\n"), w, h)
	}
	upper, lower, filterLine := v.split()
	out := fill(v.eventsPane(s, upper), upper)
	if v.explaining {
		out = append(out, fill(v.explainPane(s, lower), lower)...)
	} else {
		out = append(out, fill(v.requestsPane(s, lower), lower)...)
	}
	if filterLine {
		out = append(out, s.Events.Prompt.Render("/ ")+v.filter+"▏"+s.Events.Muted.Render("  "+i18n.T("ui.events.filter-help")))
	}
	return common.Lines(strings.Join(out, "\n"), w, h)
}

// filterNote says how many rows the filter keeps.
func (v *View) filterNote(s *styles.Styles, shown, all int) string {
	if v.filter == "" {
		return ""
	}
	return s.Events.Prompt.Render(i18n.T("ui.events.filtered", v.filter, shown, all))
}

// countOrFilter is a pane title's count: the filter's note while a filter
// is set (it gives the count too: "4 of 11"), else the count of all rows
// (countKey). Saying it once leaves the servers' marks after it room on a
// narrow terminal.
func (v *View) countOrFilter(s *styles.Styles, shown, all int, countKey string) string {
	if note := v.filterNote(s, shown, all); note != "" {
		return note
	}
	return s.Events.Muted.Render(i18n.T(countKey, all))
}

// eventsPane draws the Events in height lines: the title, the header and
// the rows around the selected event.
func (v *View) eventsPane(s *styles.Styles, height int) []string {
	w := v.width
	visible := v.visibleEvents()
	var state string
	switch {
	case v.eventsErr != "":
		state = s.Events.Bad.Render(i18n.T("ui.events.not-connected"))
	case !v.listed:
		state = s.Events.Muted.Render(i18n.T("ui.events.connecting"))
	case v.watching:
		state = s.Events.Muted.Render(i18n.T("ui.events.watching"))
	}
	title := common.JoinFitting([]string{
		s.Events.Title.Render(i18n.T("ui.events.title")),
		v.countOrFilter(s, len(visible), len(v.events.rows), "ui.events.count-events"),
		state,
	}, w, s.Events.Muted.Render(" · "))
	out := []string{title}
	if height <= 1 {
		return out[:height]
	}

	cols := []column{
		{Title: i18n.T("ui.events.col.time"), Want: 8, Min: 8, Drop: 2},
		{Title: i18n.T("ui.events.col.type"), Want: 7, Min: 7, Drop: 1}, // whole or gone: a warning's reason is coloured too
		{Title: i18n.T("ui.events.col.reason"), Min: 8},
		{Title: i18n.T("ui.events.col.namespace"), Min: 6, Drop: 3},
		{Title: i18n.T("ui.events.col.object"), Min: 14},
		{Title: i18n.T("ui.events.col.note"), Min: 24, Flex: true},
	}
	for _, i := range visible {
		r := &v.events.rows[i]
		// A reason is what a student searches for: it keeps its width.
		cols[2].Want = max(cols[2].Want, min(len(r.Reason), 24))
		cols[2].Min = cols[2].Want
		cols[3].Want = max(cols[3].Want, min(len(r.Namespace), 16))
		cols[4].Want = max(cols[4].Want, min(len(r.object()), 36))
	}
	ws := fitColumns(cols, w-markerWidth)
	titles := make([]string, len(cols))
	for i, c := range cols {
		titles[i] = c.Title
	}
	out = append(out, s.Events.Muted.Render(strings.Repeat(" ", markerWidth)+cells(cols, ws, titles)))

	rows := height - paneChrome
	if len(visible) == 0 {
		msg := i18n.T("ui.events.none")
		switch {
		case v.filter != "" && len(v.events.rows) > 0:
			msg = i18n.T("ui.events.none-match")
		case !v.listed && v.eventsErr == "":
			msg = i18n.T("ui.events.waiting")
		case !v.listed:
			msg = i18n.T("ui.events.unreachable")
		}
		out = append(out, common.WrapStyled(s.Events.Muted, msg, w, strings.Repeat(" ", markerWidth))...)
		if v.eventsErr != "" {
			out = append(out, common.WrapStyled(s.Events.Bad, v.eventsErr, w, strings.Repeat(" ", markerWidth))...)
		}
		return out
	}
	cur := v.cursor(visible)
	first := min(max(cur-rows/2, 0), max(len(visible)-rows, 0))
	if v.selected == "" {
		first = max(len(visible)-rows, 0)
	}
	for p := first; p < min(first+rows, len(visible)); p++ {
		r := &v.events.rows[visible[p]]
		typ, reason := r.Type, r.Reason
		if r.Type != "Normal" {
			typ, reason = s.Events.Warn.Render(typ), s.Events.Warn.Render(reason)
		}
		line := cells(cols, ws, []string{common.Clock(r.Time, v.loc), typ, reason, r.Namespace, r.object(), oneLine(r.Note)})
		marker := strings.Repeat(" ", markerWidth)
		if p == cur && (v.selected != "" || v.explaining) {
			marker = s.Events.Selected.Render("▸ ")
		}
		out = append(out, common.Fit(marker+line, w))
	}
	return out
}

// requestsPane draws the request log in height lines, the newest last.
func (v *View) requestsPane(s *styles.Styles, height int) []string {
	w := v.width
	visible := v.visibleRequests()
	parts := []string{
		s.Events.Title.Render(i18n.T("ui.events.requests")),
		v.countOrFilter(s, len(visible), len(v.requests.rows), "ui.events.count-requests"),
	}
	for _, srv := range v.servers {
		switch {
		case srv.Connected:
			parts = append(parts, s.Events.Good.Render("✓ ")+srv.Node)
		case srv.Err != "":
			parts = append(parts, s.Events.Bad.Render("✗ "+srv.Node+" "+i18n.T("ui.events.retrying")))
		default:
			parts = append(parts, s.Events.Muted.Render("… "+srv.Node))
		}
	}
	out := []string{common.JoinFitting(parts, w, s.Events.Muted.Render(" · "))}
	if height <= 1 {
		return out[:height]
	}
	// One column per field; the server's only when there are several.
	type field struct {
		column
		value func(r *requestRow) string
		// widest bounds the column's natural width; maxRequestColumn
		// when zero.
		widest int
	}
	fields := []field{{column: column{Title: i18n.T("ui.events.col.time"), Want: 8, Min: 8, Drop: 3}, value: func(r *requestRow) string { return common.Clock(r.Time, v.loc) }}}
	if len(v.servers) > 1 {
		fields = append(fields, field{column: column{Title: i18n.T("ui.events.col.server"), Min: 4, Drop: 4}, value: func(r *requestRow) string { return r.Server }})
	}
	fields = append(fields,
		field{column: column{Title: i18n.T("ui.events.col.verb"), Min: 4}, value: func(r *requestRow) string { return r.Verb }},
		field{column: column{Title: i18n.T("ui.events.col.resource"), Min: 8}, value: (*requestRow).resource},
		field{column: column{Title: i18n.T("ui.events.col.object"), Min: 20, Flex: true}, value: (*requestRow).object},
		field{column: column{Title: i18n.T("ui.events.col.user"), Min: 10, Drop: 1}, value: func(r *requestRow) string { return r.User }},
		field{column: column{Title: i18n.T("ui.events.col.groups"), Min: 6, Drop: 6}, value: func(r *requestRow) string { return strings.Join(r.Groups, ",") }},
		field{column: column{Title: i18n.T("ui.events.col.code"), Want: 3, Min: 3, AlignRight: true}, value: func(r *requestRow) string {
			code := strconv.Itoa(r.Code)
			switch {
			case r.Code >= 500:
				return s.Events.Bad.Render(code)
			case r.Code >= 400:
				return s.Events.Warn.Render(code)
			}
			return code
		}},
		field{column: column{Title: i18n.T("ui.events.col.latency"), Min: 5, AlignRight: true, Drop: 2}, value: (*requestRow).latency},
		field{column: column{Title: i18n.T("ui.events.col.authz"), Min: 8, Drop: 5}, value: func(r *requestRow) string {
			text := r.authorization()
			if r.Decision == apiserver.DecisionForbid {
				return s.Events.Warn.Render(text)
			}
			return text
		}, widest: maxAuthzColumn},
	)
	cols := make([]column, len(fields))
	titles := make([]string, len(fields))
	for j, f := range fields {
		cols[j], titles[j] = f.column, f.Title
		if f.Flex {
			continue
		}
		for _, i := range visible {
			widest := f.widest
			if widest == 0 {
				widest = maxRequestColumn
			}
			cols[j].Want = max(cols[j].Want, min(common.Width(f.value(&v.requests.rows[i])), widest))
		}
	}
	ws := fitColumns(cols, w)
	out = append(out, s.Events.Muted.Render(cells(cols, ws, titles)))
	rows := height - paneChrome
	if len(visible) == 0 {
		msg := i18n.T("ui.events.no-requests")
		switch {
		case v.filter != "" && len(v.requests.rows) > 0:
			msg = i18n.T("ui.events.none-match")
		case !v.anyServerConnected():
			msg = i18n.T("ui.events.requests-waiting")
		}
		out = append(out, common.WrapStyled(s.Events.Muted, msg, w, "")...)
		for _, srv := range v.servers {
			if srv.Err != "" {
				out = append(out, common.WrapStyled(s.Events.Bad, srv.Node+": "+srv.Err, w, "")...)
			}
		}
		return out
	}
	for _, i := range visible[max(len(visible)-rows, 0):] {
		r := &v.requests.rows[i]
		values := make([]string, len(fields))
		for j, f := range fields {
			values[j] = f.value(r)
		}
		out = append(out, common.Fit(cells(cols, ws, values), w))
	}
	return out
}

func (v *View) anyServerConnected() bool {
	for _, s := range v.servers {
		if s.Connected {
			return true
		}
	}
	return false
}

// explainPane explains the selected event in height lines, in place of
// the request log.
func (v *View) explainPane(s *styles.Styles, height int) []string {
	w := v.width
	r := v.current()
	if r == nil {
		return nil
	}
	title := common.JoinFitting([]string{
		s.Events.Title.Render(i18n.T("ui.events.why-title", r.Reason)),
		r.Type,
		s.Events.Muted.Render(r.object()),
	}, w, s.Events.Muted.Render(" · "))
	out := []string{title}
	body := explanation(r, w, v.loc)
	room := height - 2 // the title and the closing hint
	if len(body) > room {
		body = body[:max(room, 0)]
	}
	out = append(out, body...)
	if height > 1 {
		out = append(out, s.Events.Muted.Render(common.Fit(i18n.T("ui.events.explain-help"), w)))
	}
	return out[:min(len(out), height)]
}

// fill makes lines exactly height lines long.
func fill(lines []string, height int) []string {
	if len(lines) > height {
		return lines[:height]
	}
	for len(lines) < height {
		lines = append(lines, "")
	}
	return lines
}

// oneLine puts a multi-line note on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
