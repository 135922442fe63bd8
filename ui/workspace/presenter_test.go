package workspace

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/ui/internal/uitest"
	"github.com/klab-dev/klab/ui/keys"
	"github.com/klab-dev/klab/ui/styles"
)

// TestPresenterLayout: P gives the live view the whole width under a
// caption of the step and its check, legible at a projector's 100×30 and
// 200×60, in both languages; P again brings back the normal layout as it
// was.
func TestPresenterLayout(t *testing.T) {
	for _, lang := range uitest.Langs {
		for _, size := range []struct{ W, H int }{{100, 30}, {200, 60}} {
			name := fmt.Sprintf("presenter-%s-%dx%d", lang, size.W, size.H)
			t.Run(name, func(t *testing.T) {
				m := lessonFixture(t, lang, size.W, size.H)
				*m.c.Keys = *keys.Default()
				before := m.View()
				press(m, "P")
				if th := m.c.Styles.Theme; th != styles.Contrast {
					t.Errorf("presenter layout drawn in the %s theme, want %s", th, styles.Contrast)
				}
				frame := m.View()
				uitest.CheckFrame(t, frame, size.W, size.H)
				plain := ansi.Strip(frame)
				step := i18n.T("ui.lesson.step", 1, len(m.pane.Lesson().Steps))
				wantIn(t, plain, step, m.pane.Step().Title.String(), "✓ "+i18n.T("ui.lesson.passed"), i18n.T("ui.key.presenter-off"))
				// The lesson pane is gone: nothing of the step's text.
				if body, _, _ := strings.Cut(m.pane.Step().Body.String(), "\n"); strings.Contains(plain, body[:min(len(body), 30)]) {
					t.Errorf("the step's text is still on the screen:\n%s", plain)
				}
				// The live view has every column: its lines reach past
				// where the pane used to end.
				wide := false
				for _, l := range strings.Split(plain, "\n") {
					if ansi.StringWidth(strings.TrimRight(l, " ")) > size.W-m.lessonWidthNormal() {
						wide = true
					}
				}
				if !wide {
					t.Errorf("the live view did not take the width:\n%s", plain)
				}
				uitest.Golden(t, name, frame)
				press(m, "P")
				if th := m.c.Styles.Theme; th != styles.Standard {
					t.Errorf("after the presenter layout the theme is %s, want %s back", th, styles.Standard)
				}
				if after := m.View(); after != before {
					t.Errorf("P twice does not give back the normal layout:\n%s\nwant\n%s", after, before)
				}
			})
		}
	}
}

// lessonWidthNormal is the pane's width in the normal layout.
func (m *Model) lessonWidthNormal() int {
	on := m.presenter
	m.presenter = false
	defer func() { m.presenter = on }()
	return m.lessonWidth()
}
