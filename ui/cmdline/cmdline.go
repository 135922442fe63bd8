// Package cmdline is the workspace's command line: `:` opens it, and it
// runs kubectl, etcdctl and klab commands against the lab as klab's own
// CLI would, with a history (↑/↓), completion of command words and names
// (tab), and the output in a scrollable pane below the live view. A
// command that fails shows its error there; nothing it does can take the
// TUI down.
package cmdline

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/lessons"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/keys"
)

// Runner runs one klab command line (args[0] is "klab"), writing what it
// prints to stdout and stderr.
type Runner func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// DoneMsg is a command that ended. The workspace passes it on to the
// lesson's Evaluator, which judges commands as well as the cluster.
type DoneMsg struct {
	// Args are the command's words, starting with "klab".
	Args   []string
	Output string
	Err    error
	// Took is how long it ran.
	Took time.Duration
}

// Limits.
const (
	maxOutputLines = 2000
	maxHistory     = 200
	// Timeout bounds one command: a kubectl get -w would otherwise hold
	// the line for ever.
	Timeout = 2 * time.Minute
)

// Model is the command line and its output.
type Model struct {
	c             *common.Common
	width, height int

	run      Runner
	complete *Completer
	input    textinput.Model

	open    bool
	running bool
	cancel  context.CancelFunc

	history []string
	// hist is the position in history while browsing it; len(history)
	// means the line being typed.
	hist  int
	draft string

	// output holds the lines shown, oldest first; offset is how many of
	// the newest are scrolled past.
	output []line
	offset int
	// choices are the completions offered after an ambiguous tab.
	choices []string
}

type line struct {
	text string
	kind lineKind
}

type lineKind int

const (
	lineOutput lineKind = iota
	lineEcho
	lineError
	lineNote
)

// New returns a closed command line that runs commands with run and
// completes with complete (nil completes nothing).
func New(c *common.Common, run Runner, complete *Completer) *Model {
	in := textinput.New()
	in.Prompt = ": "
	in.CharLimit = 1000
	// A blinking cursor would redraw the whole screen twice a second
	// while the line is open.
	in.Cursor.SetMode(cursor.CursorStatic)
	return &Model{c: c, run: run, complete: complete, input: in}
}

// SetSize sets the cells of the output pane and prompt together.
func (m *Model) SetSize(width, height int) {
	m.width, m.height = width, height
	m.input.Width = max(width-4, 1)
}

// Open focuses the command line; prefill, if any, is typed in already.
func (m *Model) Open(prefill string) tea.Cmd {
	m.open = true
	m.input.SetValue(prefill)
	m.input.CursorEnd()
	m.hist = len(m.history)
	return m.input.Focus()
}

// Run opens the command line, types line in and runs it, as if the
// student had: the command shows in the output with what it prints, and
// its DoneMsg is judged like any other.
func (m *Model) Run(line string) tea.Cmd {
	focus := m.Open(line)
	return tea.Batch(focus, m.submit())
}

// Show runs line as Run does, visibly, but leaves the keys to the
// workspace: the lesson's next solution command, a step, a view are one
// key away, and : gives the line the keys again.
func (m *Model) Show(line string) tea.Cmd {
	m.Open(line)
	cmd := m.submit()
	m.input.Blur()
	return cmd
}

// Preview shows line typed so far in the open command line, without the
// keys: autoplay types a solution at a reading pace before it runs it.
func (m *Model) Preview(line string) {
	m.open = true
	m.input.SetValue(line)
	m.input.CursorEnd()
	m.input.Blur()
}

// Close unfocuses the command line and hides the output.
func (m *Model) Close() {
	m.open = false
	m.input.Blur()
	m.choices = nil
}

// Active reports whether the command line has the keys.
func (m *Model) Active() bool { return m.open && m.input.Focused() }

// Shown reports whether the command line and its output are on the
// screen, with the keys (Active) or without them (after Show).
func (m *Model) Shown() bool { return m.open }

// Running reports whether a command is running.
func (m *Model) Running() bool { return m.running }

// History returns the commands run, oldest first.
func (m *Model) History() []string { return slices.Clone(m.history) }

// Stop cancels a running command.
func (m *Model) Stop() {
	if m.cancel != nil {
		m.cancel()
	}
}

// Update handles keys while the line is open, and the end of a command.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case DoneMsg:
		m.running, m.cancel = false, nil
		m.appendOutput(msg.Output, lineOutput)
		if msg.Err != nil {
			m.appendOutput(i18n.T("ui.cmd.failed", i18n.Localize(msg.Err, i18n.Current())), lineError)
		}
		return nil
	case tea.KeyMsg:
		if !m.open {
			return nil
		}
		return m.key(keys.AsText(msg))
	}
	return nil
}

func (m *Model) key(msg tea.KeyMsg) tea.Cmd {
	k := m.c.Keys
	switch {
	case msg.Type == tea.KeyEsc:
		if m.running {
			m.Stop()
			return nil
		}
		m.Close()
		return nil
	case msg.Type == tea.KeyEnter:
		return m.submit()
	case msg.Type == tea.KeyUp:
		m.browse(-1)
		return nil
	case msg.Type == tea.KeyDown:
		m.browse(1)
		return nil
	case msg.Type == tea.KeyTab:
		m.completeLine()
		return nil
	case key.Matches(msg, k.PageUp):
		m.offset = min(m.offset+m.outputHeight(), max(len(m.output)-m.outputHeight(), 0))
		return nil
	case key.Matches(msg, k.PageDown):
		m.offset = max(m.offset-m.outputHeight(), 0)
		return nil
	}
	m.choices = nil
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return cmd
}

// browse moves through the history; the line being typed is kept while
// browsing.
func (m *Model) browse(delta int) {
	if len(m.history) == 0 {
		return
	}
	if m.hist == len(m.history) {
		m.draft = m.input.Value()
	}
	m.hist = min(max(m.hist+delta, 0), len(m.history))
	if m.hist == len(m.history) {
		m.input.SetValue(m.draft)
	} else {
		m.input.SetValue(m.history[m.hist])
	}
	m.input.CursorEnd()
}

// submit runs the line typed.
func (m *Model) submit() tea.Cmd {
	text := strings.TrimSpace(m.input.Value())
	m.choices = nil
	if text == "" {
		return nil
	}
	if m.running {
		m.appendOutput(i18n.T("ui.cmd.busy"), lineNote)
		return nil
	}
	if len(m.history) == 0 || m.history[len(m.history)-1] != text {
		m.history = append(m.history, text)
		if len(m.history) > maxHistory {
			m.history = m.history[len(m.history)-maxHistory:]
		}
	}
	m.hist = len(m.history)
	m.input.SetValue("")
	m.offset = 0
	m.appendOutput("$ "+text, lineEcho)

	args, err := Parse(text)
	if err != nil {
		m.appendOutput(i18n.Localize(err, i18n.Current()), lineError)
		return nil
	}
	if m.run == nil {
		m.appendOutput(i18n.T("ui.cmd.unavailable"), lineError)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	m.running, m.cancel = true, cancel
	run := m.run
	return func() tea.Msg {
		defer cancel()
		start := time.Now()
		var out bytes.Buffer
		w := &lockedWriter{w: &out}
		err := runSafely(ctx, run, args, w)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && err != nil {
			err = i18n.Wrap(err, "ui.cmd.timeout", Timeout)
		}
		return DoneMsg{Args: args, Output: w.String(), Err: err, Took: time.Since(start)}
	}
}

// runSafely runs the command and turns a panic into an error: a command
// that crashes must not take the TUI with it.
func runSafely(ctx context.Context, run Runner, args []string, w io.Writer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = i18n.NewError("ui.cmd.panic", r)
		}
	}()
	return run(ctx, args, w, w)
}

// Parse splits a command line into klab's words: it is split as a shell
// would, without expanding anything (lessons.SplitCommand), and a line
// that starts with kubectl or etcdctl runs as klab kubectl or klab
// etcdctl.
func Parse(text string) ([]string, error) {
	words, err := lessons.SplitCommand(text)
	if err != nil {
		return nil, err
	}
	if len(words) == 0 {
		return nil, i18n.NewError("lessons.err.cmd-empty")
	}
	switch words[0] {
	case "klab":
		if len(words) == 1 {
			return nil, i18n.NewError("ui.cmd.klab-alone")
		}
		return words, nil
	case "kubectl", "etcdctl":
		return append([]string{"klab"}, words...), nil
	}
	return nil, i18n.NewError("ui.cmd.unknown", words[0])
}

// appendOutput adds text's lines to the output.
func (m *Model) appendOutput(text string, kind lineKind) {
	text = strings.TrimRight(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if text == "" && kind == lineOutput {
		return
	}
	for _, l := range strings.Split(text, "\n") {
		m.output = append(m.output, line{text: expandTabs(l), kind: kind})
	}
	if len(m.output) > maxOutputLines {
		m.output = slices.Delete(m.output, 0, len(m.output)-maxOutputLines)
	}
}

// expandTabs turns tabs into spaces to the next multiple of eight, as a
// terminal would: a tab's width is not known to the layout otherwise.
func expandTabs(s string) string {
	if !strings.Contains(s, "\t") {
		return s
	}
	var b strings.Builder
	col := 0
	for _, r := range s {
		if r == '\t' {
			n := 8 - col%8
			b.WriteString(strings.Repeat(" ", n))
			col += n
			continue
		}
		b.WriteRune(r)
		col++
	}
	return b.String()
}

// completeLine completes the word before the cursor: alone when one
// completion fits, to the longest common prefix otherwise, listing the
// choices.
func (m *Model) completeLine() {
	if m.complete == nil {
		return
	}
	value := m.input.Value()
	words := strings.Fields(value)
	current := ""
	if len(words) > 0 && !strings.HasSuffix(value, " ") {
		current = words[len(words)-1]
		words = words[:len(words)-1]
	}
	choices := m.complete.Complete(words, current)
	switch len(choices) {
	case 0:
		m.choices = nil
		return
	case 1:
		m.setLastWord(value, current, choices[0]+" ")
		m.choices = nil
		return
	}
	if p := commonPrefix(choices); len(p) > len(current) {
		m.setLastWord(value, current, p)
	}
	m.choices = choices
}

func (m *Model) setLastWord(value, current, word string) {
	m.input.SetValue(strings.TrimSuffix(value, current) + word)
	m.input.CursorEnd()
}

func commonPrefix(words []string) string {
	p := words[0]
	for _, w := range words[1:] {
		for !strings.HasPrefix(w, p) {
			p = p[:len(p)-1]
		}
	}
	return p
}

// outputHeight is the lines of output shown above the prompt.
func (m *Model) outputHeight() int { return max(m.height-1, 0) }

// Render draws the output pane and the prompt in width×height cells.
func (m *Model) Render() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	s := m.c.Styles.Command
	h := m.outputHeight()
	var lines []string
	if len(m.choices) > 0 {
		lines = append(lines, common.Pack(m.choices, m.width, "  ")...)
		for i := range lines {
			lines[i] = s.Completion.Render(lines[i])
		}
	}
	room := max(h-len(lines), 0)
	end := max(len(m.output)-m.offset, 0)
	var out []string
	if len(m.output) == 0 {
		out = append(out, s.Muted.Render(common.Fit(i18n.T("ui.cmd.intro"), m.width)))
	}
	// A line wider than the pane wraps, as a terminal wraps it: output
	// cut at the edge would hide what a student ran the command to read
	// (a jsonpath's second item, the end of an error). The rows are
	// gathered from the newest line back until the pane is full.
	var rows []string
	for i := end - 1; i >= 0 && len(rows) < room; i-- {
		l := m.output[i]
		style := s.Output
		switch l.kind {
		case lineEcho:
			style = s.Echo
		case lineError:
			style = s.Error
		case lineNote:
			style = s.Muted
		}
		wrapped := strings.Split(ansi.Wrap(l.text, m.width, ""), "\n")
		for j := len(wrapped) - 1; j >= 0 && len(rows) < room; j-- {
			rows = append(rows, style.Render(common.Fit(wrapped[j], m.width)))
		}
	}
	slices.Reverse(rows)
	out = append(out, rows...)
	out = append(out, lines...)
	if len(out) > h {
		out = out[len(out)-h:]
	}
	for len(out) < h {
		out = append([]string{""}, out...)
	}
	prompt := m.input.View()
	if m.running {
		prompt = s.Muted.Render(i18n.T("ui.cmd.running"))
	}
	out = append(out, common.Fit(prompt, m.width))
	for i := range out {
		out[i] = common.Pad(out[i], m.width)
	}
	return strings.Join(out, "\n")
}

// Keys lists the keys that work in the command line now.
func (m *Model) Keys() []key.Binding {
	k := m.c.Keys
	b := func(keys, label, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys), key.WithHelp(label, i18n.T(desc)))
	}
	if m.running {
		return []key.Binding{b("esc", "esc", "ui.cmd.key.stop")}
	}
	// esc before the scrolling: the way out must survive a narrow footer.
	return []key.Binding{
		b("enter", "enter", "ui.cmd.key.run"),
		b("tab", "tab", "ui.cmd.key.complete"),
		b("esc", "esc", "ui.cmd.key.close"),
		b("up", "↑/↓", "ui.cmd.key.history"),
		k.PageUp, k.PageDown,
	}
}
