package workspace

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/lessons"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/keys"
	"github.com/klab-dev/klab/ui/labio"
)

// dialog is a small box over the view that asks one question: which
// member to act on, what to do with the cluster on quitting, or whether to
// recreate it in the shape a lesson step needs.
type dialog struct {
	// title is the question's message key; action what the answer does.
	title  string
	action string
	// options are member names for a chooser; empty for the other dialogs.
	options []string
	cursor  int
	// shape is the shape the reshape dialog offers; ref names the lesson
	// step, for a cluster that only its owner can remove (elsewhere).
	shape     lessons.Shape
	elsewhere bool
	ref       string
	// question is the lesson step's question, for the predict dialog.
	question lessons.Bilingual
}

func chooser(title, action string, options []string, cursor int) *dialog {
	return &dialog{title: title, action: action, options: options, cursor: cursor}
}

func quitDialog() *dialog { return &dialog{title: "ui.dlg.quit", action: "quit"} }

// reshapeDialog offers to recreate the cluster in shape for the lesson
// step ref, or, for a cluster started elsewhere, says how to.
func reshapeDialog(shape lessons.Shape, elsewhere bool, ref string) *dialog {
	return &dialog{title: "ui.dlg.reshape", action: "reshape", shape: shape, elsewhere: elsewhere, ref: ref}
}

func (d *dialog) keys(k *keys.KeyMap) []key.Binding {
	switch d.action {
	case "quit":
		return []key.Binding{k.Keep, k.Remove, k.Back}
	case "reshape":
		if d.elsewhere {
			return []key.Binding{k.Back}
		}
		return []key.Binding{k.Recreate, k.Back}
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
	switch d.action {
	case "quit":
		switch {
		case key.Matches(msg, k.Keep):
			return m.quit(false)
		case key.Matches(msg, k.Remove):
			return m.quit(true)
		}
		return nil
	case "reshape":
		if !d.elsewhere && key.Matches(msg, k.Recreate) {
			return m.recreate(d.shape)
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
		if d.action == "predict" {
			return m.answer(d.cursor)
		}
		if d.action == "reset" {
			return m.resetTo(d.cursor)
		}
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

// ReshapeMsg says that the workspace removed its cluster so that a lesson
// step can run on another shape: the root starts a cluster named Name for
// the step, or shows Err if the old one could not be removed.
type ReshapeMsg struct {
	Name   string
	Lesson *lessons.Lesson
	Step   int
	// Autoplay says autoplay was playing: it goes on in the new cluster.
	Autoplay bool
	Err      error
}

// recreate removes the cluster, to start it again in shape for the
// lesson's current step.
func (m *Model) recreate(shape lessons.Shape) tea.Cmd {
	m.dialog = nil
	m.closing, m.reshaping = true, true
	m.Stop()
	m.busy("ui.act.reshaping", m.info.Name, shape.Masters, shape.Workers)
	return labio.Close(m.lab, true)
}

// render draws the dialog's box.
func (d *dialog) render(m *Model, width int) string {
	s := m.c.Styles
	w := min(width-4, 60)
	var lines []string
	switch d.action {
	case "reshape":
		for _, l := range common.Pack(strings.Fields(i18n.T(d.title, d.shape.Masters, d.shape.Workers)), w, " ") {
			lines = append(lines, s.Dialog.Title.Render(l))
		}
		lines = append(lines, "")
		body := i18n.T("ui.dlg.reshape-body", m.info.Name)
		if d.elsewhere {
			body = i18n.T("ui.dlg.reshape-elsewhere", m.info.Name, d.ref)
		}
		for _, l := range common.Pack(strings.Fields(body), w, " ") {
			lines = append(lines, s.Dialog.Note.Render(l))
		}
		lines = append(lines, "")
		if !d.elsewhere {
			lines = append(lines, s.Dialog.Item.Render(common.Fit("enter  "+i18n.T("ui.dlg.recreate", d.shape.Masters, d.shape.Workers), w)))
		}
		lines = append(lines, s.Dialog.Note.Render(common.Fit("esc  "+i18n.T("ui.dlg.not-now"), w)))
	case "quit":
		for _, l := range common.Pack(strings.Fields(i18n.T(d.title, m.info.Name)), w, " ") {
			lines = append(lines, s.Dialog.Title.Render(l))
		}
		lines = append(lines, "")
		for _, l := range common.Pack(strings.Fields(i18n.T("ui.dlg.quit-body", m.info.Name)), w, " ") {
			lines = append(lines, s.Dialog.Note.Render(l))
		}
		keep := i18n.T("ui.dlg.keep", m.info.Name)
		if m.info.Runtime == lab.RuntimeDocker {
			keep = i18n.T("ui.dlg.keep-docker", m.info.Name)
		}
		lines = append(lines, "",
			s.Dialog.Item.Render(common.Fit("k  "+keep, w)),
			s.Dialog.Item.Render(common.Fit("r  "+i18n.T("ui.dlg.remove"), w)),
			s.Dialog.Note.Render(common.Fit("esc  "+i18n.T("ui.dlg.stay"), w)))
	case "predict":
		for _, l := range common.Pack(strings.Fields(i18n.T("ui.dlg.predict")+" "+d.question.String()), w, " ") {
			lines = append(lines, s.Dialog.Title.Render(l))
		}
		lines = append(lines, "")
		for i, o := range d.options {
			// A choice may be longer than the box: it wraps, the
			// cursor on its first line.
			for j, l := range common.Pack(strings.Fields(o), w-2, " ") {
				prefix := "  "
				if j == 0 && i == d.cursor {
					prefix = "▸ "
				}
				st := s.Dialog.Item
				if i == d.cursor {
					st = s.Dialog.ItemSelected
				}
				lines = append(lines, st.Render(common.Fit(prefix+l, w)))
			}
		}
		lines = append(lines, "")
		for _, l := range common.Pack(strings.Fields(i18n.T("ui.dlg.predict-note")), w, " ") {
			lines = append(lines, s.Dialog.Note.Render(l))
		}
	default:
		lines = append(lines, s.Dialog.Title.Render(common.Fit(i18n.T(d.title), w)), "")
		for i, o := range d.options {
			label := o
			if mem := m.state.Member(o); mem != nil && d.action != "reset" {
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
