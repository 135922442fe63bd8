package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/app"
)

// newComponentCmd is the hidden `klab component <role>`: one cluster
// component in the foreground of its own process. The Docker runtime runs
// it as a container's entrypoint, and crash tests run it to kill -9 a real
// process.
func newComponentCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:    "component <role>",
		Short:  i18n.T("component.short"),
		Hidden: true,
		Args:   cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return i18n.NewError("cli.err.unknown-command", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(
		newComponentEtcdCmd(),
		newComponentEtcdRestoreCmd(),
		newComponentAPIServerCmd(),
		newComponentLBCmd(),
		newComponentSchedulerCmd(),
		newComponentControllerManagerCmd(),
		newComponentKubeletCmd(),
		newComponentKubeProxyCmd(),
		newComponentDNSCmd(),
		newComponentPauseCmd(),
		newComponentRouteCmd(),
		newComponentAppCmd(),
	)
	return cmd
}

// newComponentAppCmd is `klab component app`: the demo workload, the
// entrypoint of the klab/app image. Its flags are the app's own, parsed by
// the app, so that a pod's args mean the same in Docker as in process.
func newComponentAppCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "app",
		Short:              i18n.T("component.app.short"),
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			code := app.Run(ctx, app.Options{Args: args, Env: os.Environ(), Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()})
			if code != 0 {
				return exitError{code: code}
			}
			return nil
		},
	}
}
