package workspace

import (
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
	var body string
	switch m.view {
	case ViewOverview:
		body = m.overview.Render(m.info, m.state)
	default:
		body = m.raft.Render(m.state)
	}
	if m.dialog != nil {
		body = common.Overlay(body, m.dialog.render(m, bw), bw, bh)
	}
	return strings.Join([]string{m.header(), body, m.statusLine(), m.Footer(m.ShortHelp())}, "\n")
}

// header names the cluster and the views, the current one marked.
func (m *Model) header() string {
	s := m.c.Styles
	tab := func(id ViewID, keyName, name string) string {
		label := keyName + " " + i18n.T(name)
		if m.view == id {
			return s.Header.ActiveTab.Render("[" + label + "]")
		}
		return s.Header.Tab.Render(" " + label + " ")
	}
	left := s.Header.Brand.Render(" klab ") + s.Header.Item.Render(" "+m.info.Name+" ")
	tabs := tab(ViewOverview, "1", "ui.view.overview") + s.Header.Bar.Render(" ") + tab(ViewRaft, "2", "ui.view.raft")
	where := i18n.T("ui.ws.attached", m.info.Runtime)
	if m.lab != nil && m.lab.Owned() {
		where = i18n.T("ui.ws.owned", m.info.Runtime)
	}
	right := s.Header.Muted.Render(" " + where + " ")
	gap := m.width - lipgloss.Width(left) - lipgloss.Width(tabs) - lipgloss.Width(right)
	if gap < 1 {
		right, gap = "", m.width-lipgloss.Width(left)-lipgloss.Width(tabs)
	}
	line := left + s.Header.Bar.Render(" ") + tabs + s.Header.Bar.Render(strings.Repeat(" ", max(gap-1, 0))) + right
	return common.Pad(line, m.width)
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
