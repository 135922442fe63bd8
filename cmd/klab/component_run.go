package main

import (
	"context"
	"fmt"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/runtime/components"
)

// startFunc starts a component, logging to logger. release, if not nil,
// frees what the component used beyond itself (a kubelet's pod runtime)
// once it has stopped.
type startFunc func(ctx context.Context, logger *slog.Logger) (p components.Process, release func(), err error)

// runForeground runs one component in the foreground of this process, as a
// container's main process: it logs to stderr, stops gracefully on SIGTERM
// or SIGINT (exit 0), and fails if the component stops by itself. what
// names the component in messages ("master-1/kube-apiserver").
func runForeground(cmd *cobra.Command, what string, start startFunc) error {
	stderr := cmd.ErrOrStderr()
	// Debug, as the local runtime logs its components, so that a
	// component's log reads the same in both runtimes.
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	p, release, err := start(ctx, logger)
	if err != nil {
		if ctx.Err() != nil {
			// Told to stop before it served (docker stop while a
			// kubelet waits for the API server): that is no failure.
			return nil
		}
		return i18n.Wrap(err, "component.err.start", what)
	}
	if release != nil {
		defer release()
	}
	fmt.Fprintln(stderr, i18n.T("component.running", what))
	select {
	case <-ctx.Done():
		// From here a second signal ends the process at once, as it
		// would a process slow to stop.
		stop()
		if err := p.Stop(); err != nil {
			return i18n.Wrap(err, "component.err.stop", what)
		}
		return nil
	case <-p.Done():
		if err := p.Err(); err != nil {
			return i18n.Wrap(err, "component.err.exited", what)
		}
		return i18n.NewError("component.err.exited-silently", what)
	}
}
