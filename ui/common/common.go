// Package common is what every part of the TUI shares: the styles, the key
// map and the clock; the contract every live view keeps; and the text
// helpers that measure in terminal cells.
package common

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/cluster/lab"
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

// View is the one contract of the workspace's live views (Overview, Raft,
// Scheduler, Proxy, Events), as soft-serve's Component is its panes': the
// workspace holds them alike. It gives each view its size and starts it on
// the cluster; it passes every message to every view, and keys only to the
// view shown; it draws the view shown, and builds the footer and the full
// help from its ShortHelp and FullHelp (help.KeyMap), which list the keys
// that work in it now.
//
// A view may follow sources of its own besides what the workspace folds
// for all (the etcd members' state). Owns says which messages come from
// them: while the view is hidden, they change nothing on the screen and
// cost no frame. Show tells the view when it is shown and hidden, for the
// sources worth following only while they can be seen.
//
// What a view's own sources tell it is recorded as tapes (Tape) and can be
// played back into a view that follows nothing (Replay, Play): the
// timeline and klab replay draw every view as it was at a moment that way,
// with the same code that drew it live.
type View interface {
	help.KeyMap
	// SetSize gives the view its width and height in cells.
	SetSize(width, height int)
	// Start follows the cluster info describes until ctx ends,
	// forgetting what the view knew of another.
	Start(ctx context.Context, info *lab.Info) tea.Cmd
	// Show tells the view that it is now shown, or now hidden.
	Show(shown bool) tea.Cmd
	// Owns reports whether msg comes from a source the view follows.
	Owns(msg tea.Msg) bool
	// Update takes a message: the view's own sources', one the workspace
	// passes to every view, or a key while the view is shown.
	Update(msg tea.Msg) tea.Cmd
	// Typing reports whether the view takes keys as text now (a filter
	// being typed): then every key but Ctrl-C is the view's, even those
	// that mean something everywhere else (q, ?, L, the views' numbers).
	Typing() bool
	// View draws the view in its size.
	View() string

	// Tape returns the compact record of msg, a message of the view's own
	// sources (Owns), for the recording the timeline and klab replay draw
	// from (package record): only the fields the view draws. It returns
	// nil for a message that changes nothing drawn.
	Tape(msg tea.Msg) []byte
	// Replay forgets what the view knew and readies it to draw the
	// cluster info describes from tapes (Play), following nothing.
	Replay(info *lab.Info)
	// Play folds a tape into the view as Update folds the message it was
	// recorded from; a tape it cannot read is an error, and changes
	// nothing.
	Play(tape []byte) error
	// Keyframe returns a tape that, played on a view just given Replay,
	// brings it to what it holds now: the checkpoints that make
	// scrubbing back through a long recording fast.
	Keyframe() []byte
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

// SetTheme redraws everything in theme t from the next frame on: views
// read their styles from Common each time they draw.
func (c *Common) SetTheme(t styles.Theme) {
	if c.Styles.Theme != t {
		c.Styles = styles.New(t)
	}
}

// Footer draws key hints in one line of width cells. When they do not all
// fit, the keys for all keys (?) and for quitting stay at the end of the
// line and the others are cut, ending with an ellipsis: whatever the
// width, a student can find every key and the way out.
func Footer(c *Common, bindings []key.Binding, width int) string {
	st := c.Styles.Footer.Help
	sep := st.ShortSeparator.Inline(true).Render(" • ")
	items := make([]string, 0, len(bindings))
	var pinned []string
	for _, b := range bindings {
		if !b.Enabled() {
			continue
		}
		item := st.ShortKey.Inline(true).Render(b.Help().Key) + " " + st.ShortDesc.Inline(true).Render(b.Help().Desc)
		if sameKeys(b, c.Keys.Help) || sameKeys(b, c.Keys.Quit) {
			pinned = append(pinned, item)
		}
		items = append(items, item)
	}
	if line := strings.Join(items, sep); Width(line) <= width {
		return Pad(line, width)
	}
	tail := strings.Join(pinned, sep)
	room := width
	if tail != "" {
		room -= Width(tail) + Width(sep)
	}
	ellipsis := " " + st.Ellipsis.Inline(true).Render("…")
	var b strings.Builder
	used := 0
	for _, it := range items {
		if slices.Contains(pinned, it) {
			continue
		}
		w := Width(it)
		if used > 0 {
			w += Width(sep)
		}
		if used+w+Width(ellipsis) > room {
			b.WriteString(ellipsis)
			used += Width(ellipsis)
			break
		}
		if used > 0 {
			b.WriteString(sep)
		}
		b.WriteString(it)
		used += w
	}
	if tail == "" {
		return Pad(b.String(), width)
	}
	if used == 0 {
		return Pad(tail, width)
	}
	return Pad(b.String()+sep+tail, width)
}

func sameKeys(a, b key.Binding) bool {
	ak, bk := a.Keys(), b.Keys()
	if len(ak) != len(bk) || len(ak) == 0 {
		return false
	}
	for i := range ak {
		if ak[i] != bk[i] {
			return false
		}
	}
	return true
}

// FullHelp draws every key group in columns.
func FullHelp(c *Common, groups [][]key.Binding, width int) string {
	h := help.New()
	h.Styles = c.Styles.Footer.Help
	h.Width = width
	h.FullSeparator = "   "
	return h.FullHelpView(groups)
}
