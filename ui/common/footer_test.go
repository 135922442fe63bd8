package common

import (
	"strings"
	"testing"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/klab-dev/klab/assets/i18n"
)

// TestFooterKeepsHelpAndQuit: however narrow the footer, ? and q stay at
// its end and nothing runs past the width; when everything fits, the keys
// keep their order.
func TestFooterKeepsHelpAndQuit(t *testing.T) {
	lipgloss.SetColorProfile(termenv.Ascii)
	for _, lang := range []i18n.Lang{i18n.English, i18n.Korean} {
		prev := i18n.Current()
		i18n.SetLang(lang)
		c := New()
		k := c.Keys
		bindings := []key.Binding{k.NextStep, k.Hint, k.Focus, k.Command, k.Help, k.Quit, k.Up, k.Down, k.PageDown, k.PageUp, k.Lang}
		help, quit := k.Help.Help(), k.Quit.Help()
		for _, width := range []int{40, 60, 80, 120, 200} {
			got := Footer(c, bindings, width)
			if w := Width(got); w != width {
				t.Errorf("%s at %d: footer is %d cells wide", lang, width, w)
			}
			line := strings.TrimRight(got, " ")
			if !strings.HasSuffix(line, help.Key+" "+help.Desc+" • "+quit.Key+" "+quit.Desc) && !strings.HasSuffix(line, k.Lang.Help().Desc) {
				t.Errorf("%s at %d: footer does not end with ? and q (or, whole, with L):\n%q", lang, width, line)
			}
			if width <= 80 && !strings.Contains(line, "…") {
				t.Errorf("%s at %d: a cut footer has no ellipsis: %q", lang, width, line)
			}
		}
		whole := Footer(c, []key.Binding{k.NextStep, k.Help, k.Quit}, 200)
		if i, j := strings.Index(whole, k.NextStep.Help().Desc), strings.Index(whole, quit.Desc); i < 0 || j < i {
			t.Errorf("%s: a footer that fits is reordered: %q", lang, whole)
		}
		i18n.SetLang(prev)
	}
}
