package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/lab"
)

// clockTimeout bounds one clock command.
const clockTimeout = 5 * time.Second

// newClockCmd builds klab clock: what the TUI's Raft view does with space,
// '.', '+' and '-', for scripts, lessons and a second terminal.
func newClockCmd() *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "clock",
		Short: i18n.T("clock.short"),
		Long:  i18n.T("clock.long"),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runClock(cmd, name, etcd.ClockRequest{})
		},
	}
	addNameFlag(cmd, &name)
	sub := func(use, short string, args cobra.PositionalArgs, req func(args []string) (etcd.ClockRequest, error)) *cobra.Command {
		var name string
		c := &cobra.Command{
			Use:   use,
			Short: i18n.T(short),
			Args:  args,
			RunE: func(cmd *cobra.Command, args []string) error {
				r, err := req(args)
				if err != nil {
					return err
				}
				return runClock(cmd, name, r)
			},
		}
		addNameFlag(c, &name)
		return c
	}
	yes, no := true, false
	cmd.AddCommand(
		sub("show", "clock.show.short", noArgs, func([]string) (etcd.ClockRequest, error) { return etcd.ClockRequest{}, nil }),
		sub("pause", "clock.pause.short", noArgs, func([]string) (etcd.ClockRequest, error) { return etcd.ClockRequest{Paused: &yes}, nil }),
		sub("resume", "clock.resume.short", noArgs, func([]string) (etcd.ClockRequest, error) { return etcd.ClockRequest{Paused: &no}, nil }),
		sub("step [N]", "clock.step.short", cobra.MaximumNArgs(1), func(args []string) (etcd.ClockRequest, error) {
			n := 1
			if len(args) == 1 {
				v, err := strconv.Atoi(args[0])
				if err != nil || v < 1 || v > 1000 {
					return etcd.ClockRequest{}, i18n.NewError("clock.err.step", args[0])
				}
				n = v
			}
			return etcd.ClockRequest{Step: n}, nil
		}),
		sub("speed <N>", "clock.speed.short", exactArgs(1, "<N>"), func(args []string) (etcd.ClockRequest, error) {
			v, err := strconv.Atoi(args[0])
			if err != nil || v < 1 || v > 100 {
				return etcd.ClockRequest{}, i18n.NewError("clock.err.speed", args[0])
			}
			ms := float64((lab.BaseTick * time.Duration(v)).Milliseconds())
			return etcd.ClockRequest{TickIntervalMS: &ms}, nil
		}),
	)
	return cmd
}

// runClock sends one request to every member and prints each one's clock.
// An empty request changes nothing and just reads the clocks.
func runClock(cmd *cobra.Command, name string, req etcd.ClockRequest) error {
	info, err := lab.LoadInfo(name)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), clockTimeout)
	defer cancel()
	answers, err := lab.SetClock(ctx, info.Members, req)
	out := cmd.OutOrStdout()
	for _, a := range answers {
		tick := time.Duration(a.Clock.TickIntervalMS * float64(time.Millisecond))
		switch {
		case a.Err != nil:
			fmt.Fprintln(out, i18n.T("clock.line.missing", a.Member, a.Err))
		case a.Clock.Paused:
			fmt.Fprintln(out, i18n.T("clock.line.paused", a.Member, tick, a.Clock.Ticks))
		default:
			fmt.Fprintln(out, i18n.T("clock.line.running", a.Member, tick, a.Clock.Ticks))
		}
	}
	return err
}
