package home

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/ui/common"
)

// formWidth is the widest the form grows: wider, the eye loses the line
// between a label and its value.
const formWidth = 76

// View draws the home screen in its size.
func (m *Model) View() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	s := m.c.Styles
	w := min(m.width-4, formWidth)
	lines := []string{s.Home.Logo.Render("klab")}
	for _, l := range common.Pack(strings.Fields(i18n.T("ui.home.tagline")), w, " ") {
		lines = append(lines, s.Home.Tagline.Render(l))
	}
	lines = append(lines, "")
	if m.starting != nil || len(m.steps) > 0 || m.pending != "" || m.err != nil {
		lines = append(lines, m.progressLines(w)...)
	} else {
		lines = append(lines, m.formLines(w)...)
	}
	body := strings.Join(lines, "\n")
	// Centred horizontally, a little above the middle vertically.
	left := max(0, (m.width-w)/2)
	top := max(0, (m.height-lipgloss.Height(body))/3)
	out := strings.Repeat("\n", top) + indent(body, left)
	return common.Lines(out, m.width, m.height)
}

func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	ls := strings.Split(s, "\n")
	for i := range ls {
		ls[i] = pad + ls[i]
	}
	return strings.Join(ls, "\n")
}

// formLines draws the settings, the hint for the focused one, and the
// actions.
func (m *Model) formLines(w int) []string {
	s := m.c.Styles
	labelW := 0
	labels := []string{"ui.home.lang", "ui.home.masters", "ui.home.workers", "ui.home.speed", "ui.home.runtime", "ui.home.name"}
	for _, l := range labels {
		labelW = max(labelW, lipgloss.Width(i18n.T(l)))
	}
	labelW += 2
	values := []string{
		langWord(i18n.Current()),
		fmt.Sprint(m.spec.Masters),
		fmt.Sprint(m.spec.Workers),
		speedWord(m.spec.Speed),
		m.spec.Runtime,
	}
	var lines []string
	for row, l := range labels {
		focused := row == m.cursor
		label := common.Pad(i18n.T(l), labelW)
		marker := "  "
		if focused {
			marker = s.Home.LabelFocused.Render("▸ ")
			label = s.Home.LabelFocused.Render(label)
		} else {
			label = s.Home.Label.Render(label)
		}
		var value string
		if row == rowName {
			value = "  " + m.name.View()
			if !focused {
				value = s.Home.Value.Render("  " + m.name.Value())
			}
		} else {
			v := values[row]
			if focused {
				value = s.Home.ValueFocused.Render("‹ " + v + " ›")
			} else {
				value = s.Home.Value.Render("  " + v)
			}
		}
		lines = append(lines, common.Fit(marker+label+value, w))
	}
	lines = append(lines, "")
	for _, hint := range common.Pack(strings.Fields(m.hint()), w-2, " ") {
		lines = append(lines, "  "+s.Home.Note.Render(hint))
	}
	lines = append(lines, "")

	action := func(row int, text string) string {
		if row == m.cursor {
			return s.Home.ActionFocused.Render(common.Fit("▸ "+text, w))
		}
		return s.Home.Action.Render(common.Fit("  "+text, w))
	}
	lines = append(lines, action(rowStart, i18n.T("ui.home.start", m.Spec().Name, m.spec.Masters)))
	if len(m.running) > 0 {
		lines = append(lines, "", s.Home.Section.Render(i18n.T("ui.home.running")))
		for i, r := range m.running {
			lines = append(lines, action(rowStart+1+i, i18n.T("ui.home.attach", r.Name, r.Masters, r.Runtime, r.PID)))
		}
	}
	return lines
}

// hint explains the focused setting in a sentence or two.
func (m *Model) hint() string {
	switch m.cursor {
	case rowLang:
		return i18n.T("ui.home.hint.lang")
	case rowMasters:
		q := m.spec.Masters/2 + 1
		return i18n.T("ui.home.hint.masters", m.spec.Masters, q, m.spec.Masters-q)
	case rowWorkers:
		return i18n.T("ui.home.hint.workers")
	case rowSpeed:
		return i18n.T("ui.home.hint.speed")
	case rowRuntime:
		switch m.spec.Runtime {
		case lab.RuntimeDocker:
			return i18n.T("ui.home.hint.docker")
		case lab.RuntimeLocal:
			return i18n.T("ui.home.hint.local")
		}
		return i18n.T("ui.home.hint.auto")
	case rowName:
		return i18n.T("ui.home.hint.name")
	case rowStart:
		return i18n.T("ui.home.hint.start")
	}
	return i18n.T("ui.home.hint.attach")
}

// progressLines draws the creation steps: ✓ done, ✗ failed, … running,
// each with its duration.
func (m *Model) progressLines(w int) []string {
	s := m.c.Styles
	var lines []string
	switch {
	case m.pending != "":
		lines = append(lines, s.Home.Section.Render(common.Fit(i18n.T("ui.home.attaching", m.pending), w)))
	case m.starting != nil || len(m.steps) > 0:
		spec := m.Spec()
		lines = append(lines, s.Home.Section.Render(common.Fit(i18n.T("ui.home.starting", spec.Name, spec.Masters), w)))
	}
	lines = append(lines, "")
	for _, st := range m.steps {
		var mark, dur string
		switch {
		case !st.done:
			mark = s.Home.StepRunning.Render("…")
		case st.ev.Phase == lab.StepFailed:
			mark = s.Home.StepFailed.Render("✗")
		default:
			mark = s.Home.StepDone.Render("✓")
		}
		if st.done {
			dur = s.Home.StepTime.Render(" (" + roundDuration(st.ev.Elapsed) + ")")
		}
		title := st.ev.Title.String()
		lines = append(lines, common.Fit(mark+" "+s.Home.StepTitle.Render(title)+dur, w))
	}
	if m.err != nil {
		lines = append(lines, "")
		for _, l := range common.Pack(strings.Fields(i18n.T("ui.home.failed", m.err.Error())), w, " ") {
			lines = append(lines, s.Home.StepFailed.Render(l))
		}
	}
	return lines
}

// roundDuration prints a step's duration as klab up does: milliseconds
// under a second, else tenths of seconds.
func roundDuration(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}
