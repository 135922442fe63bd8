package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/runtime/components"
	"github.com/klab-dev/klab/cluster/runtime/docker/standby"
)

// startFunc starts a component, logging to logger. release, if not nil,
// frees what the component used beyond itself (a kubelet's pod runtime)
// once it has stopped.
type startFunc func(ctx context.Context, logger *slog.Logger) (p components.Process, release func(), err error)

// runForeground runs one component in the foreground of this process, as a
// container's main process: it logs to stderr, stops gracefully on SIGTERM
// or SIGINT (exit 0), and fails if the component stops by itself. what
// names the component in messages ("master-1/kube-apiserver").
//
// The Docker runtime can also restart the component without restarting its
// container (standby.StandDown, then standby.StandUp): the component stops
// gracefully as on SIGTERM, the process waits, and a new instance starts
// from the same spec with nothing kept from the first, as a restarted
// process would. A lab's restore does this to every component, for a
// container start costs far more than the component's own.
func runForeground(cmd *cobra.Command, what string, start startFunc) error {
	stderr := cmd.ErrOrStderr()
	// Debug, as the local runtime logs its components, so that a
	// component's log reads the same in both runtimes.
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// Buffered so that a stand-up sent while the component still stops
	// is not lost.
	standbyc := make(chan os.Signal, 4)
	signal.Notify(standbyc, standby.StandDown, standby.StandUp)
	defer signal.Stop(standbyc)
	for {
		p, release, err := start(ctx, logger)
		if err != nil {
			if ctx.Err() != nil {
				// Told to stop before it served (docker stop while a
				// kubelet waits for the API server): that is no failure.
				return nil
			}
			return i18n.Wrap(err, "component.err.start", what)
		}
		fmt.Fprintln(stderr, i18n.T("component.running", what))
		down, err := serve(ctx, stop, p, standbyc, what)
		if release != nil {
			release()
		}
		if err != nil || !down {
			return err
		}
		fmt.Fprintln(stderr, i18n.T("component.stood-down", what))
		if !awaitStandUp(ctx, standbyc) {
			return nil
		}
	}
}

// serve waits while the component runs. It stops it on SIGTERM or SIGINT
// (down false) or on a stand-down (down true), and fails if it stops by
// itself.
func serve(ctx context.Context, stop context.CancelFunc, p components.Process, standbyc <-chan os.Signal, what string) (down bool, err error) {
	for {
		select {
		case <-ctx.Done():
			// From here a second signal ends the process at once, as it
			// would a process slow to stop.
			stop()
			if err := p.Stop(); err != nil {
				return false, i18n.Wrap(err, "component.err.stop", what)
			}
			return false, nil
		case <-p.Done():
			if err := p.Err(); err != nil {
				return false, i18n.Wrap(err, "component.err.exited", what)
			}
			return false, i18n.NewError("component.err.exited-silently", what)
		case sig := <-standbyc:
			if sig != standby.StandDown {
				continue // already up
			}
			if err := p.Stop(); err != nil {
				return false, i18n.Wrap(err, "component.err.stop", what)
			}
			return true, nil
		}
	}
}

// awaitStandUp waits, the component stopped, for the signal to start it
// again; false if the process is told to end instead.
func awaitStandUp(ctx context.Context, standbyc <-chan os.Signal) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case sig := <-standbyc:
			if sig == standby.StandUp {
				return true
			}
		}
	}
}
