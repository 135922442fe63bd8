package workspace

import (
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/styles"
)

// The presenter layout (P) gives the live view the whole width, for a
// projector, under a caption of two lines: the lesson's step, and what its
// check sees now. The lesson pane is only hidden: P again brings it back
// as it was, at the same step, scroll and hints. The layout is drawn in
// the high-contrast theme, which a projector's washed-out picture needs,
// and leaving it brings back the theme from before.

// captionHeight is the presenter layout's caption: two lines and a rule.
const captionHeight = 3

// presenting reports whether the presenter layout is on: it needs a
// lesson to caption.
func (m *Model) presenting() bool { return m.presenter && m.pane != nil }

// togglePresenter switches between the presenter layout and the normal
// one.
func (m *Model) togglePresenter() {
	if m.pane == nil {
		return
	}
	m.presenter = !m.presenter
	if m.presenter {
		m.themeBefore = m.c.Styles.Theme
		m.c.SetTheme(styles.Contrast)
	} else {
		m.c.SetTheme(m.themeBefore)
	}
	m.layout()
}

// caption draws the presenter layout's caption in width cells.
func (m *Model) caption(width int) string {
	s := m.c.Styles
	st := m.pane.Step()
	step := i18n.T("ui.lesson.step", m.pane.Index()+1, len(m.pane.Lesson().Steps))
	title := s.Lesson.StepTitle.Render(common.Fit(step+"  "+st.Title.String(), width))
	v := m.pane.Verdict()
	var state string
	switch {
	case v.Passed:
		state = s.Lesson.Passed.Render(common.Fit("✓ "+i18n.T("ui.lesson.passed"), width))
	case len(v.Reasons) > 0:
		first, _, _ := strings.Cut(v.Text(i18n.Current()), "\n")
		state = s.Lesson.Waiting.Render(common.Fit("… "+first, width))
	default:
		state = s.Lesson.Waiting.Render(common.Fit("… "+i18n.T("ui.lesson.waiting"), width))
	}
	rule := s.Lesson.Rule.Render(strings.Repeat("─", max(width, 0)))
	return lipgloss.JoinVertical(lipgloss.Left, title, state, rule)
}
