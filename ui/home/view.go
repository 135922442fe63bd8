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
	if m.height >= 30 {
		for _, l := range common.Pack(strings.Fields(i18n.T("ui.home.tagline")), w, " ") {
			lines = append(lines, s.Home.Tagline.Render(l))
		}
	}
	lines = append(lines, "")
	if m.starting != nil || len(m.steps) > 0 || m.pending != "" || m.err != nil {
		lines = append(lines, m.progressLines(w)...)
	} else {
		form := m.formLines(w, 0)
		// Too tall for the terminal: the lesson list scrolls, the rest of
		// the form stays whole.
		if excess := len(lines) + len(form) - m.height; excess > 0 {
			form = m.formLines(w, max(3, len(m.lessons)+1-excess-2))
		}
		lines = append(lines, form...)
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

// formLines draws the settings, the lessons, the hint for the focused
// row, and the actions. With limit > 0 it shows at most limit lesson
// rows, around the cursor, and says how many more are above and below.
func (m *Model) formLines(w, limit int) []string {
	s := m.c.Styles
	labelW := 0
	labels := map[int]string{rowLang: "ui.home.lang", rowMasters: "ui.home.masters", rowWorkers: "ui.home.workers", rowSpeed: "ui.home.speed", rowRuntime: "ui.home.runtime", rowName: "ui.home.name"}
	for _, l := range labels {
		labelW = max(labelW, common.Width(i18n.T(l)))
	}
	labelW += 2
	values := map[int]string{
		rowLang:    langWord(i18n.Current()),
		rowMasters: fmt.Sprint(m.spec.Masters),
		rowWorkers: fmt.Sprint(m.spec.Workers),
		rowSpeed:   speedWord(m.spec.Speed),
		rowRuntime: m.spec.Runtime,
	}
	action := func(focused bool, text string) string {
		if focused {
			return s.Home.ActionFocused.Render(common.Fit("▸ "+text, w))
		}
		return s.Home.Action.Render(common.Fit("  "+text, w))
	}
	var lines []string
	cur := m.at()
	for i, r := range m.rowList() {
		focused := i == m.cursor
		switch r.kind {
		case rowLesson:
			top, end := m.lessonWindow(limit, cur)
			if r.index == 0 {
				lines = append(lines, "", s.Home.Section.Render(i18n.T("ui.home.lessons")))
				lines = append(lines, m.problemLines(w)...)
				if top > 0 {
					lines = append(lines, s.Home.Note.Render("    "+i18n.T("ui.home.more-above", top)))
				}
			}
			if r.index >= top && r.index < end {
				lines = append(lines, m.lessonLine(r.index, focused, w))
			}
			if r.index == len(m.lessons) {
				if more := len(m.lessons) + 1 - end; more > 0 {
					lines = append(lines, s.Home.Note.Render("    "+i18n.T("ui.home.more-below", more)))
				}
				lines = append(lines, "")
			}
			continue
		case rowStart:
			lines = append(lines, "")
			for _, hint := range common.Pack(strings.Fields(m.hint(cur)), w-2, " ") {
				lines = append(lines, "  "+s.Home.Note.Render(hint))
			}
			// A lesson's frame: how long, what level, what to take first.
			if cur.kind == rowLesson && cur.index > 0 {
				for _, about := range common.Pack(strings.Fields(m.lessons[cur.index-1].Frame.About(m.lessonTitle)), w-2, " ") {
					lines = append(lines, "  "+s.Home.Note.Render(about))
				}
			}
			lines = append(lines, "", action(focused, m.startLabel()))
			continue
		case rowRunning:
			if r.index == 0 {
				lines = append(lines, "", s.Home.Section.Render(i18n.T("ui.home.running")))
			}
			c := m.running[r.index]
			label := i18n.N("ui.home.attach", c.Masters, c.Name, c.Masters, c.Runtime, c.PID)
			if c.PID == 0 {
				label = i18n.N("ui.home.attach-engine", c.Masters, c.Name, c.Masters, c.Containers)
			}
			lines = append(lines, action(focused, label))
			continue
		}
		label := common.Pad(i18n.T(labels[r.kind]), labelW)
		marker := "  "
		if focused {
			marker = s.Home.LabelFocused.Render("▸ ")
			label = s.Home.LabelFocused.Render(label)
		} else {
			label = s.Home.Label.Render(label)
		}
		var value string
		if r.kind == rowName {
			value = "  " + m.name.View()
			if !focused {
				value = s.Home.Value.Render("  " + m.name.Value())
			}
		} else {
			v := values[r.kind]
			if focused {
				value = s.Home.ValueFocused.Render("‹ " + v + " ›")
			} else {
				value = s.Home.Value.Render("  " + v)
			}
		}
		if r.kind == rowRuntime {
			value += m.dockerNote()
		}
		lines = append(lines, common.Fit(marker+label+value, w))
	}
	return lines
}

// lessonLine is one row of the lesson list: the title and the progress,
// a dot per step; index 0 is free play.
func (m *Model) lessonLine(index int, focused bool, w int) string {
	s := m.c.Styles
	marker := "  "
	if focused {
		marker = s.List.ItemSelected.Render("▸ ")
	}
	if index == 0 {
		title := i18n.T("ui.home.free-play")
		if m.lesson == nil {
			title = "✓ " + title
		} else {
			title = "  " + title
		}
		style := s.List.Item
		if focused {
			style = s.List.ItemSelected
		}
		return common.Fit(marker+style.Render(title), w)
	}
	l := m.lessons[index-1]
	done, total := m.completed(l)
	var dots strings.Builder
	for _, st := range l.Steps {
		if m.progress != nil && m.progress.Done(l.ID, st.ID) {
			dots.WriteString("●")
		} else {
			dots.WriteString("○")
		}
	}
	// The progress column is as wide as the longest lesson's, so that
	// the counts line up.
	progW := 0
	for _, o := range m.lessons {
		progW = max(progW, len(fmt.Sprintf(" %d/%d ", len(o.Steps), len(o.Steps)))+len(o.Steps))
	}
	prog := common.Pad(fmt.Sprintf(" %d/%d %s", done, total, dots.String()), progW)
	progStyle := s.List.Progress
	if done == total && total > 0 {
		progStyle = s.List.Done
	}
	chosen := "  "
	if m.lesson == l {
		chosen = "✓ "
	}
	titleW := max(w-common.Width(marker)-common.Width(prog)-2, 8)
	style := s.List.Item
	if focused {
		style = s.List.ItemSelected
	}
	title := common.Pad(common.Fit(chosen+l.Title.String(), titleW), titleW)
	return common.Fit(marker+style.Render(title)+progStyle.Render(prog), w)
}

// startLabel is the start action's text: the cluster, and the lesson.
func (m *Model) startLabel() string {
	label := i18n.N("ui.home.start", m.spec.Masters, m.Spec().Name, m.spec.Masters)
	if m.lesson != nil {
		label += " · " + i18n.T("ui.home.with-lesson", m.lesson.Title.String())
	}
	return label
}

// maxProblemLines bounds the problems of a lesson pack the home screen
// lists; klab lessons list --dir lists them all.
const maxProblemLines = 4

// problemLines says that the lesson pack did not load, and why: its
// first problems, each at its file and line.
func (m *Model) problemLines(w int) []string {
	if len(m.problems) == 0 {
		return nil
	}
	s := m.c.Styles
	lines := []string{s.Home.Warning.Render(common.Fit("  "+i18n.T("ui.home.pack-problems", m.pack, len(m.problems)), w))}
	for i, p := range m.problems {
		if i == maxProblemLines {
			lines = append(lines, s.Home.Warning.Render(common.Fit("    "+i18n.T("ui.home.pack-more", len(m.problems)-i, m.pack), w)))
			break
		}
		lines = append(lines, s.Home.Warning.Render(common.Fit("    "+p.In(i18n.Current()), w)))
	}
	return lines
}

// lessonWindow returns the lesson rows shown, [top, end), at most limit
// of them (all when limit is 0), moved only as far as keeps the cursor's
// row in view when it is on a lesson.
func (m *Model) lessonWindow(limit int, cur row) (top, end int) {
	rows := len(m.lessons) + 1
	if limit <= 0 || limit >= rows {
		return 0, rows
	}
	if cur.kind == rowLesson {
		m.lessonTop = min(m.lessonTop, cur.index)
		m.lessonTop = max(m.lessonTop, cur.index-limit+1)
	}
	m.lessonTop = max(0, min(m.lessonTop, rows-limit))
	return m.lessonTop, m.lessonTop + limit
}

// lessonTitle names a lesson by its title, or by id when it is not among
// the home screen's lessons.
func (m *Model) lessonTitle(id string) string {
	for _, l := range m.lessons {
		if l.ID == id {
			return l.Title.String()
		}
	}
	return id
}

// dockerNote says how the Docker engine answered, next to the runtime.
func (m *Model) dockerNote() string {
	s := m.c.Styles
	switch {
	case m.docker == nil:
		return s.Home.Note.Render("  " + i18n.T("ui.home.docker.probing"))
	case m.docker.Err != nil:
		return s.Home.Warning.Render("  " + i18n.T("ui.home.docker.down"))
	}
	return s.Home.Note.Render("  " + i18n.T("ui.home.docker.up", m.docker.Version))
}

// hint explains the focused row in a sentence or two.
func (m *Model) hint(r row) string {
	switch r.kind {
	case rowLang:
		return i18n.T("ui.home.hint.lang")
	case rowLesson:
		if r.index == 0 {
			return i18n.T("ui.home.hint.free-play")
		}
		return m.lessons[r.index-1].Summary.String()
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
	if m.running[r.index].PID == 0 {
		return i18n.T("ui.home.hint.attach-engine")
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
		lines = append(lines, s.Home.Section.Render(common.Fit(i18n.N("ui.home.starting", spec.Masters, spec.Name, spec.Masters), w)))
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
