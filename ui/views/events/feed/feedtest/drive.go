// Package feedtest runs a live view's commands the way Bubble Tea would,
// for tests that feed a view from real streams.
package feedtest

import (
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// Drive runs cmd and the commands that the messages it produces lead to
// (through update), each on its own goroutine as Bubble Tea runs them,
// until done holds after a message, or fails the test after timeout. The
// commands still waiting when it returns end with their feed's context.
func Drive(t testing.TB, cmd tea.Cmd, update func(tea.Msg) tea.Cmd, done func() bool, timeout time.Duration) {
	t.Helper()
	msgs := make(chan tea.Msg, 64)
	launch := func(c tea.Cmd) {
		if c != nil {
			go func() { msgs <- c() }()
		}
	}
	launch(cmd)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !done() {
		select {
		case msg := <-msgs:
			switch msg := msg.(type) {
			case nil:
			case tea.BatchMsg:
				for _, c := range msg {
					launch(c)
				}
			default:
				launch(update(msg))
			}
		case <-deadline.C:
			t.Fatalf("gave up after %v", timeout)
		}
	}
}
