package labio

import (
	"context"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/etcd"
)

// Clock sends a clock request to every member. action names it in the
// ActionMsg ("pause", "resume", "step", "speed").
func Clock(l Lab, action string, req etcd.ClockRequest) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		return ActionMsg{Action: action, Err: l.SetClock(ctx, req)}
	}
}

func errWriteTimeout(key string, err error) error {
	return i18n.Wrap(err, "ui.err.write-timeout", key)
}
