package workspace

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/lipgloss"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/ui/common"
)

// View draws the workspace.
func (m *Model) View() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	bw, bh := m.bodySize()
	lw := m.lessonWidth()
	vw := bw - lw
	live := m.shownView().View()
	if m.rewind != nil {
		live = m.rewoundView()
	}
	if m.cmdline.Shown() {
		live += "\n" + m.cmdline.Render()
	}
	var body string
	switch {
	case m.presenting():
		body = m.caption(bw) + "\n" + common.Lines(live, vw, max(bh-captionHeight, 0))
	case m.pane != nil:
		body = lipgloss.JoinHorizontal(lipgloss.Top, m.pane.Render(m.focus == focusLesson), common.Lines(live, vw, bh))
	default:
		body = common.Lines(live, vw, bh)
	}
	if m.dialog != nil {
		body = common.Overlay(body, m.dialog.render(m, bw), bw, bh)
	}
	return strings.Join([]string{m.header(), body, m.statusLine(), m.Footer(m.ShortHelp())}, "\n")
}

// header names the cluster and the views, the current one marked. Tabs
// lose their names, then the cluster's whereabouts, when space is short.
func (m *Model) header() string {
	s := m.c.Styles
	var ids []ViewID
	for id := ViewOverview; id <= ViewEvents; id++ {
		if m.views[id] != nil {
			ids = append(ids, id)
		}
	}
	names := map[ViewID]string{ViewOverview: "ui.view.overview", ViewRaft: "ui.view.raft", ViewScheduler: "ui.view.scheduler", ViewProxy: "ui.view.proxy", ViewEvents: "ui.view.events"}
	tabs := func(short bool) string {
		var parts []string
		for _, id := range ids {
			label := strconv.Itoa(int(id))
			if !short || m.view == id {
				label += " " + i18n.T(names[id])
			}
			if m.view == id {
				parts = append(parts, s.Header.ActiveTab.Render("["+label+"]"))
			} else {
				parts = append(parts, s.Header.Tab.Render(" "+label+" "))
			}
		}
		return strings.Join(parts, s.Header.Bar.Render(" "))
	}
	left := s.Header.Brand.Render(" klab ") + s.Header.Item.Render(" "+m.info.Name+" ")
	where := i18n.T("ui.ws.attached", m.info.Runtime)
	if m.lab != nil && m.lab.Owned() {
		where = i18n.T("ui.ws.owned", m.info.Runtime)
	}
	right := s.Header.Muted.Render(" " + where + " ")
	t := tabs(false)
	gap := m.width - common.Width(left) - common.Width(t) - common.Width(right)
	if gap < 1 {
		right = ""
		gap = m.width - common.Width(left) - common.Width(t)
	}
	if gap < 1 {
		t = tabs(true)
		gap = m.width - common.Width(left) - common.Width(t)
	}
	line := left + s.Header.Bar.Render(" ") + t + s.Header.Bar.Render(strings.Repeat(" ", max(gap-1, 0))) + right
	return common.Pad(common.Fit(line, m.width), m.width)
}

func (m *Model) statusLine() string {
	s := m.c.Styles
	text := m.status.text()
	switch {
	case text == "":
		return strings.Repeat(" ", m.width)
	case m.status.err != nil:
		return common.Pad(s.Status.Error.Render(common.Fit("✗ "+text, m.width)), m.width)
	case m.status.busy:
		return common.Pad(s.Status.Info.Render(common.Fit("… "+text, m.width)), m.width)
	}
	return common.Pad(s.Status.Success.Render(common.Fit("✓ "+text, m.width)), m.width)
}

// Footer draws key hints in one line of the workspace's width.
func (m *Model) Footer(bindings []key.Binding) string {
	return common.Footer(m.c, bindings, m.width)
}
