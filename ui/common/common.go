// Package common is what every part of the TUI shares: the size it may
// draw in, the styles, the key map and the clock, and the small contract a
// pane keeps.
package common

import (
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"

	"github.com/klab-dev/klab/ui/keys"
	"github.com/klab-dev/klab/ui/styles"
)

// Common is shared by the root model and every pane. Panes keep a pointer,
// so a language switch (which rebuilds Keys) reaches all of them at once.
type Common struct {
	Styles *styles.Styles
	Keys   *keys.KeyMap
	// Now returns the time; tests fix it so that rendering is repeatable.
	Now func() time.Time
}

// New returns a Common with the default styles and keys.
func New() *Common {
	return &Common{Styles: styles.DefaultStyles(), Keys: keys.Default(), Now: time.Now}
}

// Component is what a pane offers the root model: it draws in the size it
// is given and says which keys work in it right now.
type Component interface {
	help.KeyMap
	// SetSize gives the pane its width and height in cells.
	SetSize(width, height int)
}

// Enabled returns the bindings that are enabled, in order: a pane builds
// its help from every key it knows and this keeps those that apply.
func Enabled(bs ...key.Binding) []key.Binding {
	out := make([]key.Binding, 0, len(bs))
	for _, b := range bs {
		if b.Enabled() {
			out = append(out, b)
		}
	}
	return out
}

// Footer draws key hints in one line of width cells; bubbles/help ends it
// with an ellipsis when they do not all fit.
func Footer(c *Common, bindings []key.Binding, width int) string {
	h := help.New()
	h.Styles = c.Styles.Footer.Help
	h.Width = width
	return Pad(h.ShortHelpView(bindings), width)
}

// FullHelp draws every key group in columns.
func FullHelp(c *Common, groups [][]key.Binding, width int) string {
	h := help.New()
	h.Styles = c.Styles.Footer.Help
	h.Width = width
	h.FullSeparator = "   "
	return h.FullHelpView(groups)
}
