// Package lesson is the workspace's lesson pane: the lesson's title and
// where the student is in it, the step's text rendered from Markdown, the
// commands to try, the hints asked for so far, and, pinned at the bottom
// so that it never scrolls away, the state of the step's check.
//
// The pane draws; it does not judge. The workspace feeds the Evaluator
// and hands the pane each new verdict.
package lesson

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/glamour"
	"github.com/charmbracelet/glamour/ansi"
	glamourstyles "github.com/charmbracelet/glamour/styles"
	"github.com/charmbracelet/lipgloss"
	xansi "github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/lessons"
	"github.com/klab-dev/klab/ui/common"
)

// Pane shows one lesson at one step.
type Pane struct {
	c             *common.Common
	width, height int

	lesson *lessons.Lesson
	step   int
	// runtime is the cluster's runtime (lessons.RuntimeDocker or
	// RuntimeLocal), whose passages of the text are shown; empty shows
	// both, each under its name.
	runtime string
	// done marks the steps completed, by ID.
	done map[string]bool
	// answers are the choices predicted, by step ID.
	answers map[string]int
	verdict lessons.Verdict
	// hints is how many of the step's hints are shown.
	hints int
	// solution is -1 while the step's solution is hidden, else how many
	// of its commands were run from the pane.
	solution int
	// offset is the first line of the scrolled part shown.
	offset int

	// body caches the rendered text: glamour takes milliseconds, and the
	// pane is drawn on every frame.
	body bodyCache
}

type bodyCache struct {
	lang     i18n.Lang
	step     int
	width    int
	hints    int
	solution int
	passed   bool
	answer   int
	dark     bool
	colour   bool
	lines    []string
}

// New returns the pane of l at step index step.
func New(c *common.Common, l *lessons.Lesson, step int) *Pane {
	p := &Pane{c: c, lesson: l, done: map[string]bool{}, answers: map[string]int{}}
	p.SetStep(step)
	return p
}

// SetRuntime makes the text read as it does on the cluster's runtime.
func (p *Pane) SetRuntime(rt string) {
	p.runtime = rt
	p.body.lines = nil
}

// Lesson returns the lesson shown.
func (p *Pane) Lesson() *lessons.Lesson { return p.lesson }

// Index returns the index of the step shown.
func (p *Pane) Index() int { return p.step }

// Step returns the step shown.
func (p *Pane) Step() *lessons.Step { return p.lesson.Steps[p.step] }

// Last reports whether the step shown is the lesson's last.
func (p *Pane) Last() bool { return p.step == len(p.lesson.Steps)-1 }

// SetStep shows step i (clamped), with no hints and its check not judged
// yet.
func (p *Pane) SetStep(i int) {
	p.step = min(max(i, 0), len(p.lesson.Steps)-1)
	p.hints, p.offset = 0, 0
	p.solution = -1
	p.verdict = lessons.Verdict{}
}

// SetVerdict shows the check's latest verdict.
func (p *Pane) SetVerdict(v lessons.Verdict) {
	p.verdict = v
	if v.Passed {
		p.done[p.Step().ID] = true
	}
}

// Verdict returns the verdict shown.
func (p *Pane) Verdict() lessons.Verdict { return p.verdict }

// SetDone marks a step completed (from saved progress).
func (p *Pane) SetDone(stepID string) { p.done[stepID] = true }

// Done reports whether the step was completed.
func (p *Pane) Done(stepID string) bool { return p.done[stepID] }

// SetAnswer records the choice predicted at a step (from saved progress,
// or just now).
func (p *Pane) SetAnswer(stepID string, choice int) { p.answers[stepID] = choice }

// Answer returns the choice predicted at a step, if any.
func (p *Pane) Answer(stepID string) (int, bool) {
	c, ok := p.answers[stepID]
	return c, ok
}

// Asking reports whether the step shown asks a question that is still
// open: not answered, and the step not passed (after it, the answer is
// shown, not asked).
func (p *Pane) Asking() bool {
	_, answered := p.answers[p.Step().ID]
	return p.Step().Predict != nil && !answered && !p.verdict.Passed
}

// choiceLabel is a choice's letter: a, b, c.
func choiceLabel(i int) string { return string(rune('a'+i)) + ")" }

// ChoiceLabel is the label a choice is shown with, for the dialog that
// asks.
func ChoiceLabel(i int) string { return choiceLabel(i) }

// SolutionShown reports whether the step's solution is shown.
func (p *Pane) SolutionShown() bool { return p.solution >= 0 }

// ShowSolution shows the step's solution and scrolls to it; it reports
// false when the step has none (its check holds on its own).
func (p *Pane) ShowSolution() bool {
	if len(p.Step().Solution) == 0 {
		return false
	}
	if p.solution < 0 {
		p.solution = 0
	}
	p.offset = 1 << 30
	return true
}

// NextSolution returns the solution's next command to run and counts it
// as run; ok is false when the solution is hidden or every command ran.
func (p *Pane) NextSolution() (cmd lessons.Command, ok bool) {
	sol := p.Step().Solution
	if p.solution < 0 || p.solution >= len(sol) {
		return "", false
	}
	cmd = sol[p.solution]
	p.solution++
	p.offset = 1 << 30
	return cmd, true
}

// SolutionLeft returns how many of the shown solution's commands were not
// run yet.
func (p *Pane) SolutionLeft() int {
	if p.solution < 0 {
		return 0
	}
	return len(p.Step().Solution) - p.solution
}

// HintsLeft returns how many hints are not shown yet.
func (p *Pane) HintsLeft() int { return len(p.Step().Hints) - p.hints }

// ShowHint shows one more hint and scrolls to it; it reports false when
// every hint is shown already.
func (p *Pane) ShowHint() bool {
	if p.HintsLeft() == 0 {
		return false
	}
	p.hints++
	p.offset = 1 << 30 // the end, clamped when drawn
	return true
}

// Scroll moves the text by delta lines.
func (p *Pane) Scroll(delta int) {
	p.offset = max(0, p.offset+delta)
}

// SetSize sets the cells the pane draws in.
func (p *Pane) SetSize(width, height int) { p.width, p.height = width, height }

// PageSize is how far a page key scrolls.
func (p *Pane) PageSize() int { return max(1, p.height-6) }

// Render draws the pane; focused marks it as the pane the keys go to.
func (p *Pane) Render(focused bool) string {
	w, h := p.width, p.height
	if w <= 0 || h <= 0 {
		return ""
	}
	s := p.c.Styles.Lesson
	inner := max(w-2, 1) // a rule on the right separates the pane from the view

	title := s.Title
	if focused {
		title = s.TitleFocused
	}
	head := []string{
		title.Render(common.Fit(p.lesson.Title.String(), inner)),
		p.stepLine(inner),
		s.Rule.Render(strings.Repeat("─", inner)),
	}
	check := p.checkLines(inner)
	bodyH := max(h-len(head)-len(check), 0)
	if bodyH == 0 {
		// Too short for the text: the check matters most.
		check = check[:min(len(check), max(h-len(head), 0))]
	}
	body := p.bodyLines(inner)
	p.offset = min(p.offset, max(len(body)-bodyH, 0))
	shown := body[p.offset:min(p.offset+bodyH, len(body))]
	lines := append(append(head, shown...), make([]string, bodyH-len(shown))...)
	lines = append(lines, check...)
	lines = lines[:min(len(lines), h)]
	// A scroll mark on the rule's right end says there is more.
	if more := p.offset+bodyH < len(body); more || p.offset > 0 {
		mark := "↓"
		if !more {
			mark = "↑"
		} else if p.offset > 0 {
			mark = "↕"
		}
		lines[2] = s.Rule.Render(strings.Repeat("─", max(inner-2, 0))) + " " + s.Muted.Render(mark)
	}
	sep := s.Rule.Render("│")
	for i := range lines {
		lines[i] = common.Pad(common.Fit(lines[i], inner), inner) + " " + sep
	}
	return strings.Join(lines, "\n")
}

// stepLine says where the student is: step x/y, a dot per step (filled
// when done), and the step's title.
func (p *Pane) stepLine(width int) string {
	s := p.c.Styles.Lesson
	var dots strings.Builder
	for i, st := range p.lesson.Steps {
		switch {
		case i == p.step:
			dots.WriteString(s.DotCurrent.Render("◉"))
		case p.done[st.ID]:
			dots.WriteString(s.DotDone.Render("●"))
		default:
			dots.WriteString(s.Muted.Render("○"))
		}
	}
	pos := s.Step.Render(i18n.T("ui.lesson.step", p.step+1, len(p.lesson.Steps)))
	line := pos + " " + dots.String() + " " + s.StepTitle.Render(p.Step().Title.String())
	return common.Fit(line, width)
}

// checkLines is the pinned block: the check's state and what it is
// waiting for, and the way on.
func (p *Pane) checkLines(width int) []string {
	s := p.c.Styles.Lesson
	st := p.Step()
	lines := []string{s.Rule.Render(strings.Repeat("─", width))}
	if st.Check == nil {
		return append(lines, s.Muted.Render(common.Fit(i18n.T("ui.lesson.no-check"), width)))
	}
	l := i18n.Current()
	if p.verdict.Passed {
		next := i18n.T("ui.lesson.next")
		if p.Last() {
			next = i18n.T("ui.lesson.finished")
		}
		lines = append(lines, s.Passed.Render(common.Fit("✓ "+i18n.T("ui.lesson.passed")+" — "+next, width)))
	} else {
		lines = append(lines, s.Waiting.Render(common.Fit("… "+i18n.T("ui.lesson.waiting"), width)))
	}
	// The guess, beside what the cluster did (the reasons below).
	if ans, ok := p.answers[st.ID]; ok && p.verdict.Passed && st.Predict != nil && ans < len(st.Predict.Choices) {
		key := "ui.lesson.guess-wrong"
		if st.Predict.Right(ans) {
			key = "ui.lesson.guess-right"
		}
		lines = append(lines, s.Muted.Render(common.Fit("  "+i18n.T(key, choiceLabel(ans)+" "+oneParagraph(st.Predict.Choices[ans].Text.String())), width)))
	}
	reasons := p.verdict.Reasons
	if len(reasons) == 0 && !p.verdict.Passed {
		reasons = st.Check.Describe()
	}
	for i, r := range reasons {
		if i == 2 {
			break // the pinned block stays small; the rest is in the text
		}
		lines = append(lines, s.Muted.Render(common.Fit("  "+r.In(l), width)))
	}
	return lines
}

// bodyLines is the scrolled part: the step's text, the commands to try
// and the hints shown.
func (p *Pane) bodyLines(width int) []string {
	dark := lipgloss.HasDarkBackground()
	colour := lipgloss.ColorProfile() != termenv.Ascii
	c := &p.body
	passed := p.verdict.Passed
	answer, answered := p.answers[p.Step().ID]
	if !answered {
		answer = -1
	}
	if c.lines != nil && c.lang == i18n.Current() && c.step == p.step && c.width == width &&
		c.hints == p.hints && c.solution == p.solution && c.passed == passed && c.answer == answer && c.dark == dark && c.colour == colour {
		return c.lines
	}
	st := p.Step()
	var md strings.Builder
	if p.step == 0 {
		md.WriteString(frameMarkdown(p.lesson.Frame))
	}
	md.WriteString(unwrapListItems(st.Body.ForRuntime(i18n.Current(), p.runtime)))
	if st.Predict != nil {
		md.WriteString(predictionMarkdown(st.Predict, answer, passed))
	}
	if len(st.Try) > 0 {
		fmt.Fprintf(&md, "\n\n**%s**\n\n", i18n.T("ui.lesson.try"))
		for _, cmd := range st.Try {
			fmt.Fprintf(&md, "    %s\n", cmd)
		}
	}
	if p.Last() && passed {
		md.WriteString(recapMarkdown(p.lesson.Frame, p.runtime))
	}
	lines := strings.Split(renderMarkdown(md.String(), width, dark, colour), "\n")
	s := p.c.Styles.Lesson
	// Each hint is a paragraph set off by a bar drawn here: glamour's own
	// block quote counts its two-cell bar as one cell, so its lines came
	// out too wide and broke apart, leaving words without the bar.
	bar := s.Rule.Render("│ ")
	for i := 0; i < p.hints; i++ {
		hint := fmt.Sprintf("**%s** %s", i18n.T("ui.lesson.hint", i+1), oneParagraph(st.Hints[i].ForRuntime(i18n.Current(), p.runtime)))
		lines = append(lines, "")
		for _, l := range strings.Split(renderMarkdown(hint, max(width-2, 1), dark, colour), "\n") {
			lines = append(lines, bar+l)
		}
	}
	// The solution, once asked for: each command marked run (✓) or next
	// (▸), set off by the hints' bar.
	if p.solution >= 0 {
		lines = append(lines, "", bar+s.Step.Render(i18n.T("ui.lesson.solution")))
		for i, cmd := range st.Solution {
			mark := "  "
			switch {
			case i < p.solution:
				mark = "✓ "
			case i == p.solution:
				mark = "▸ "
			}
			for _, l := range wrapWide(mark+cmd.String(), max(width-2, 1)) {
				lines = append(lines, bar+l)
			}
		}
	}
	// The notes wrap rather than lose their ends in a narrow pane.
	var notes []string
	if st.Predict != nil && answer < 0 && !passed {
		notes = append(notes, i18n.T("ui.lesson.answer-note"))
	}
	if len(st.Try) > 0 {
		notes = append(notes, i18n.T("ui.lesson.try-note"))
	}
	if left := len(st.Hints) - p.hints; left > 0 {
		notes = append(notes, i18n.T("ui.lesson.hints-left", left))
	}
	switch {
	case len(st.Solution) > 0 && p.solution < 0 && !passed:
		notes = append(notes, i18n.T("ui.lesson.solution-note"))
	case p.solution >= 0 && p.solution < len(st.Solution):
		notes = append(notes, i18n.T("ui.lesson.solution-run-note"))
	}
	for _, n := range notes {
		for _, l := range common.Pack(strings.Fields(n), width, " ") {
			lines = append(lines, s.Muted.Render(l))
		}
	}
	*c = bodyCache{lang: i18n.Current(), step: p.step, width: width, hints: p.hints, solution: p.solution, passed: passed, answer: answer, dark: dark, colour: colour, lines: lines}
	return lines
}

// predictionMarkdown is the step's question: before the act, the choices
// with the one picked marked; once the check passed, every choice with
// whether it was right and why, beside what the student guessed.
func predictionMarkdown(pr *lessons.Prediction, answer int, passed bool) string {
	var md strings.Builder
	fmt.Fprintf(&md, "\n\n**%s** %s\n\n", i18n.T("ui.lesson.predict"), oneParagraph(pr.Question.String()))
	for i, c := range pr.Choices {
		mark := "  "
		if i == answer {
			mark = "▸ "
		}
		text := oneParagraph(c.Text.String())
		if !passed {
			fmt.Fprintf(&md, "- %s%s %s\n", mark, choiceLabel(i), text)
			continue
		}
		verdict := "✗"
		if c.Right {
			verdict = "✓"
		}
		fmt.Fprintf(&md, "- %s%s %s **%s** — %s\n", mark, choiceLabel(i), text, verdict, oneParagraph(c.Why.String()))
	}
	return md.String()
}

// frameMarkdown is what the lesson says of itself at its start: how long
// it takes and for whom, what it assumes, and what the student will be able
// to do; a rule sets it off from the first step.
func frameMarkdown(f lessons.Frame) string {
	if f.Empty() {
		return ""
	}
	var md strings.Builder
	var about []string
	if f.Minutes > 0 {
		about = append(about, i18n.T("lessons.frame.minutes", f.Minutes))
	}
	if f.Level != "" {
		about = append(about, i18n.T("lessons.level."+string(f.Level)))
	}
	if len(about) > 0 {
		fmt.Fprintf(&md, "*%s*\n\n", strings.Join(about, " · "))
	}
	if len(f.Prerequisites) > 0 {
		names := f.Prerequisites
		if len(f.PrerequisiteTitles) == len(f.Prerequisites) {
			names = make([]string, len(f.Prerequisites))
			for i, t := range f.PrerequisiteTitles {
				names[i] = t.String()
			}
		}
		fmt.Fprintf(&md, "%s\n\n", i18n.T("lessons.frame.prerequisites", strings.Join(names, ", ")))
	}
	if len(f.Objectives) > 0 {
		fmt.Fprintf(&md, "**%s**\n\n", i18n.T("lessons.frame.objectives"))
		for _, o := range f.Objectives {
			fmt.Fprintf(&md, "- %s\n", oneParagraph(o.String()))
		}
		md.WriteString("\n")
	}
	md.WriteString("---\n\n")
	return md.String()
}

// recapMarkdown is what the lesson says once its last step passed: the
// recap and what to read next.
func recapMarkdown(f lessons.Frame, runtime string) string {
	if f.Recap == (lessons.Bilingual{}) && len(f.ReadNext) == 0 {
		return ""
	}
	var md strings.Builder
	md.WriteString("\n\n---\n\n")
	if f.Recap != (lessons.Bilingual{}) {
		fmt.Fprintf(&md, "**%s**\n\n%s\n\n", i18n.T("lessons.frame.recap"), unwrapListItems(f.Recap.ForRuntime(i18n.Current(), runtime)))
	}
	if len(f.ReadNext) > 0 {
		fmt.Fprintf(&md, "**%s**\n\n", i18n.T("lessons.frame.read-next"))
		for _, r := range f.ReadNext {
			// The address is written out: a terminal shows no link
			// targets, and a student copies it.
			fmt.Fprintf(&md, "- %s  \n  `%s`\n", oneParagraph(r.Title.String()), r.URL)
		}
	}
	return md.String()
}

// oneParagraph joins a hint's lines so that it stays inside its quote.
func oneParagraph(s string) string { return strings.Join(strings.Fields(s), " ") }

// renderMarkdown renders md for the terminal at width cells. glamour's
// styles are used without the document's left margin (the pane is narrow;
// code keeps its indent, which sets commands apart), in ASCII when there
// is no colour.
func renderMarkdown(md string, width int, dark, colour bool) string {
	var cfg ansi.StyleConfig
	switch {
	case !colour:
		cfg = glamourstyles.ASCIIStyleConfig
		// Without colour, glamour would print ** and ` around words,
		// which read as Markdown not yet rendered.
		cfg.Strong.BlockPrefix, cfg.Strong.BlockSuffix = "", ""
		cfg.Emph.BlockPrefix, cfg.Emph.BlockSuffix = "", ""
		cfg.Code.BlockPrefix, cfg.Code.BlockSuffix = "", ""
	case dark:
		cfg = glamourstyles.DarkStyleConfig
	default:
		cfg = glamourstyles.LightStyleConfig
	}
	zero := uint(0)
	cfg.Document.Margin = &zero
	cfg.Document.BlockPrefix, cfg.Document.BlockSuffix = "", ""
	// glamour wraps each styled run of a paragraph on its own, which left
	// a word alone on a line after inline code or an ellipsis ("would"
	// under "as iptables-save"), and leaves a bullet or a quote's bar out
	// of the width. So glamour renders without wrapping, and each line is
	// wrapped here, by the cells it takes, under its own prefix.
	r, err := glamour.NewTermRenderer(glamour.WithStyles(cfg), glamour.WithWordWrap(0))
	if err != nil {
		return md
	}
	out, err := r.Render(unwrapParagraphs(md))
	if err != nil {
		return md
	}
	var lines []string
	for _, l := range strings.Split(strings.Trim(out, "\n"), "\n") {
		lines = append(lines, wrapUnder(trimRightStyled(l), width)...)
	}
	return strings.Join(lines, "\n")
}

// trimRightStyled removes the blanks at the end of a styled line, styled
// or not.
func trimRightStyled(l string) string {
	plain := xansi.Strip(l)
	keep := common.Width(strings.TrimRight(plain, " "))
	if keep == common.Width(plain) {
		return l
	}
	return xansi.Truncate(l, keep, "")
}

// linePrefix returns how many cells at the start of a rendered line are
// its prefix (indent, a quote's bar, a list's bullet or number), and
// whether the prefix repeats on every wrapped line (a quote's bar) rather
// than turning into blanks (a bullet's hanging indent).
func linePrefix(plain string) (cells int, repeat bool) {
	rs := []rune(plain)
	i := 0
	for i < len(rs) {
		switch {
		case rs[i] == ' ':
			i++
		case (rs[i] == '│' || rs[i] == '|') && i+1 < len(rs) && rs[i+1] == ' ':
			repeat = true
			i += 2
		case (rs[i] == '•' || rs[i] == '-' || rs[i] == '*') && i+1 < len(rs) && rs[i+1] == ' ':
			i += 2
			return common.Width(string(rs[:i])), repeat
		case rs[i] >= '0' && rs[i] <= '9':
			j := i
			for j < len(rs) && rs[j] >= '0' && rs[j] <= '9' {
				j++
			}
			if j+1 < len(rs) && rs[j] == '.' && rs[j+1] == ' ' {
				return common.Width(string(rs[:j+2])), repeat
			}
			return common.Width(string(rs[:i])), repeat
		default:
			return common.Width(string(rs[:i])), repeat
		}
	}
	return common.Width(string(rs[:i])), repeat
}

// wrapUnder wraps a rendered line to width cells: the text after its
// prefix is wrapped at spaces (through a word only where one is wider than
// the line), and each further line starts under the text, with the quote
// bar again where the prefix had one.
func wrapUnder(l string, width int) []string {
	if common.Width(l) <= width {
		return []string{l}
	}
	cells, repeat := linePrefix(xansi.Strip(l))
	if cells > width/2 {
		cells, repeat = 0, false
	}
	prefix, rest := xansi.Cut(l, 0, cells), xansi.Cut(l, cells, common.Width(l))
	cont := strings.Repeat(" ", cells)
	if repeat {
		cont = prefix
	}
	var out []string
	for i, part := range wrapWide(rest, width-cells) {
		if i == 0 {
			out = append(out, prefix+part)
		} else {
			out = append(out, cont+part)
		}
	}
	return out
}

// wrapWide wraps a line wider than width: at spaces where it can, and
// through a word only where one is wider than the line. It never breaks
// at a hyphen, as x/ansi's Wrap does: a command's `--flag` split after its
// first dash reads as two words and cannot be copied.
func wrapWide(l string, width int) []string {
	total := common.Width(l)
	if total <= width || width <= 0 {
		return []string{l}
	}
	// spaces holds the cell at which each space of the plain text starts.
	spaces := map[int]bool{}
	cell := 0
	for _, r := range xansi.Strip(l) {
		if r == ' ' {
			spaces[cell] = true
		}
		cell += common.Width(string(r))
	}
	var out []string
	start := 0
	for total-start > width {
		cut, next := start+width, start+width
		for p := start + width; p > start; p-- {
			if spaces[p] {
				cut, next = p, p+1
				break
			}
		}
		out = append(out, xansi.Cut(l, start, cut))
		start = next
		for spaces[start] && start < total {
			start++
		}
	}
	if start < total {
		out = append(out, xansi.Cut(l, start, total))
	}
	return out
}
