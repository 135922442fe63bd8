package labio

import (
	"context"
	"strconv"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/lab"
)

// Clock sends a clock request to every member. action names it in the
// ActionMsg ("pause", "resume", "step", "speed").
func Clock(l Lab, action string, req etcd.ClockRequest) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		return ActionMsg{Action: action, Args: clockArgs(req), Err: l.SetClock(ctx, req)}
	}
}

// clockArgs is the klab clock command a clock request stands for.
func clockArgs(req etcd.ClockRequest) []string {
	args := []string{"klab", "clock"}
	switch {
	case req.Step > 0:
		return append(args, "step", strconv.Itoa(req.Step))
	case req.TickIntervalMS != nil:
		args = append(args, "speed", strconv.FormatFloat(*req.TickIntervalMS/float64(lab.BaseTick.Milliseconds()), 'f', -1, 64))
	case req.Paused != nil && *req.Paused:
		return append(args, "pause")
	case req.Paused != nil:
		return append(args, "resume")
	default:
		return append(args, "show")
	}
	return args
}

func errWriteTimeout(key string, err error) error {
	return i18n.Wrap(err, "ui.err.write-timeout", key)
}
