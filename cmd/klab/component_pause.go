package main

import (
	"fmt"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
)

// newComponentPauseCmd is `klab component pause`: the pause container of a
// node or of a pod sandbox, which only holds a network namespace for the
// containers that join it. It does nothing until SIGTERM or SIGINT, then
// exits 0. As PID 1 of a container the kernel delivers it no signal it has
// not asked for, so it installs its own handlers (signal.NotifyContext) and
// never relies on the default ones.
//
// Unlike upstream's pause it reaps no zombies: klab's containers share the
// network namespace only, never the PID namespace, so it has no children.
func newComponentPauseCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "pause",
		Short: i18n.T("component.pause.short"),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			// One line, so that whoever started it (a test, docker logs)
			// knows the handlers are in place.
			fmt.Fprintln(cmd.ErrOrStderr(), i18n.T("component.running", "pause"))
			<-ctx.Done()
			return nil
		},
	}
}
