package uitest

import tea "github.com/charmbracelet/bubbletea"

// Key returns the message Bubble Tea sends for a key written as the
// KeyMap writes it ("k", "space", "enter", "esc", "down", "ctrl+c").
func Key(s string) tea.KeyMsg {
	switch s {
	case "space", " ":
		return tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "left":
		return tea.KeyMsg{Type: tea.KeyLeft}
	case "right":
		return tea.KeyMsg{Type: tea.KeyRight}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "pgup":
		return tea.KeyMsg{Type: tea.KeyPgUp}
	case "pgdown":
		return tea.KeyMsg{Type: tea.KeyPgDown}
	case "backspace":
		return tea.KeyMsg{Type: tea.KeyBackspace}
	case "ctrl+c":
		return tea.KeyMsg{Type: tea.KeyCtrlC}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
}

// Run executes cmd and every command its messages lead to through update,
// as Bubble Tea would, and returns the messages in order. Quit is
// reported, not obeyed.
func Run(cmd tea.Cmd, update func(tea.Msg) tea.Cmd) []tea.Msg {
	var out []tea.Msg
	queue := []tea.Cmd{cmd}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		msg := c()
		switch msg := msg.(type) {
		case nil:
			continue
		case tea.BatchMsg:
			queue = append(queue, msg...)
			continue
		}
		out = append(out, msg)
		if _, quit := msg.(tea.QuitMsg); quit {
			continue
		}
		queue = append(queue, update(msg))
	}
	return out
}
