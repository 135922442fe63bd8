package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
)

// newStartCmd is `klab start`: a Docker cluster whose containers were
// stopped (klab stop, or the engine restarted) runs again on its data.
func newStartCmd() *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "start",
		Short: i18n.T("start.short"),
		Long:  i18n.T("start.long"),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintln(out, i18n.T("start.starting", name))
			c, err := lab.Start(cmd.Context(), name, lab.Options{Progress: newStepPrinter(out).progress, BuildID: dockerBuildID()})
			if err != nil {
				return err
			}
			printReady(cmd, c)
			return nil
		},
	}
	addNameFlag(cmd, &name)
	return cmd
}

// newStopCmd is `klab stop`: a Docker cluster's containers stop, keeping
// everything for klab start.
func newStopCmd() *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "stop",
		Short: i18n.T("stop.short"),
		Long:  i18n.T("stop.long"),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			ctx, cancel := context.WithTimeout(cmd.Context(), downTimeout)
			defer cancel()
			if err := lab.Stop(ctx, name, newStepPrinter(out).progress); err != nil {
				return err
			}
			fmt.Fprintln(out, i18n.T("stop.done", name, nameHint(name)))
			return nil
		},
	}
	addNameFlag(cmd, &name)
	return cmd
}
