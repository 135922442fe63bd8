package workspace

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/keys"
	"github.com/klab-dev/klab/ui/labio"
)

// dialog is a small box over the view that asks one question: which
// member to act on, or what to do with the cluster on quitting.
type dialog struct {
	// title is the question's message key; action what the answer does.
	title  string
	action string
	// options are member names for a chooser; empty for the quit dialog.
	options []string
	cursor  int
}

func chooser(title, action string, options []string, cursor int) *dialog {
	return &dialog{title: title, action: action, options: options, cursor: cursor}
}

func quitDialog() *dialog { return &dialog{title: "ui.dlg.quit", action: "quit"} }

func (d *dialog) keys(k *keys.KeyMap) []key.Binding {
	if d.action == "quit" {
		return []key.Binding{k.Keep, k.Remove, k.Back}
	}
	return []key.Binding{k.Up, k.Down, k.Select, k.Back}
}

func (m *Model) updateDialog(msg tea.KeyMsg) tea.Cmd {
	k := m.c.Keys
	d := m.dialog
	if key.Matches(msg, k.Back) {
		m.dialog = nil
		return nil
	}
	if d.action == "quit" {
		switch {
		case key.Matches(msg, k.Keep):
			return m.quit(false)
		case key.Matches(msg, k.Remove):
			return m.quit(true)
		}
		return nil
	}
	switch {
	case key.Matches(msg, k.Up):
		d.cursor = (d.cursor - 1 + len(d.options)) % len(d.options)
	case key.Matches(msg, k.Down):
		d.cursor = (d.cursor + 1) % len(d.options)
	case key.Matches(msg, k.Select):
		m.dialog = nil
		name := d.options[d.cursor]
		if d.action == "partition" {
			return m.partition(name)
		}
		return m.restart(name)
	}
	return nil
}

// quit closes the lab (keeping or removing its data) and then quits.
func (m *Model) quit(remove bool) tea.Cmd {
	m.dialog = nil
	m.closing = true
	m.Stop()
	if remove {
		m.busy("ui.act.removing", m.info.Name)
	} else {
		m.busy("ui.act.stopping", m.info.Name)
	}
	return labio.Close(m.lab, remove)
}

// render draws the dialog's box.
func (d *dialog) render(m *Model, width int) string {
	s := m.c.Styles
	w := min(width-4, 60)
	var lines []string
	if d.action == "quit" {
		for _, l := range common.Pack(strings.Fields(i18n.T(d.title, m.info.Name)), w, " ") {
			lines = append(lines, s.Dialog.Title.Render(l))
		}
		lines = append(lines, "")
		for _, l := range common.Pack(strings.Fields(i18n.T("ui.dlg.quit-body", m.info.Name)), w, " ") {
			lines = append(lines, s.Dialog.Note.Render(l))
		}
		lines = append(lines, "",
			s.Dialog.Item.Render(common.Fit("k  "+i18n.T("ui.dlg.keep", m.info.Name), w)),
			s.Dialog.Item.Render(common.Fit("r  "+i18n.T("ui.dlg.remove"), w)),
			s.Dialog.Note.Render(common.Fit("esc  "+i18n.T("ui.dlg.stay"), w)))
	} else {
		lines = append(lines, s.Dialog.Title.Render(common.Fit(i18n.T(d.title), w)), "")
		for i, o := range d.options {
			label := o
			if mem := m.state.Member(o); mem != nil {
				label += "  (" + i18n.T("ui.role."+mem.Role()) + ")"
			}
			if i == d.cursor {
				lines = append(lines, s.Dialog.ItemSelected.Render(common.Fit("▸ "+label, w)))
			} else {
				lines = append(lines, s.Dialog.Item.Render(common.Fit("  "+label, w)))
			}
		}
	}
	return s.Dialog.Box.Render(strings.Join(lines, "\n"))
}
