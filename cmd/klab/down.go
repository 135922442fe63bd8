package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime/docker"
)

// downTimeout bounds klab down: the running process's graceful stop, then
// the removal of the state dir.
const downTimeout = closeTimeout + 30*time.Second

func newDownCmd() *cobra.Command {
	var (
		name     string
		keepData bool
		all      bool
	)
	cmd := &cobra.Command{
		Use:   "down",
		Short: i18n.T("down.short"),
		Long:  i18n.T("down.long"),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			ctx, cancel := context.WithTimeout(cmd.Context(), downTimeout)
			defer cancel()
			names := []string{name}
			if all {
				if cmd.Flags().Changed("name") {
					return i18n.NewError("down.err.all-and-name")
				}
				var err error
				if names, err = lab.Clusters(ctx); err != nil {
					return err
				}
				if len(names) == 0 {
					fmt.Fprintln(out, i18n.T("down.none"))
					return nil
				}
			}
			for _, name := range names {
				if err := downOne(ctx, cmd, name, keepData); err != nil {
					return err
				}
			}
			// Every cluster is gone: so are the images of older klab
			// builds, which nothing else ever removes.
			if all && !keepData && docker.Ping(ctx) == nil {
				return pruneImages(cmd)
			}
			return nil
		},
	}
	addNameFlag(cmd, &name)
	cmd.Flags().BoolVar(&keepData, "keep-data", false, i18n.T("down.flag.keep-data"))
	cmd.Flags().BoolVar(&all, "all", false, i18n.T("down.flag.all"))
	return cmd
}

func downOne(ctx context.Context, cmd *cobra.Command, name string, keepData bool) error {
	out := cmd.OutOrStdout()
	res, err := lab.Down(ctx, name, keepData, newStepPrinter(out).progress)
	if err != nil {
		return err
	}
	switch {
	case res.Removed:
		fmt.Fprintln(out, i18n.T("down.removed", name))
	case keepData && dirExists(res.Dir):
		fmt.Fprintln(out, i18n.T("down.kept", name, res.Dir))
	case !res.WasRunning:
		fmt.Fprintln(out, i18n.T("down.nothing", name))
	}
	return nil
}

func dirExists(dir string) bool {
	st, err := os.Stat(dir)
	return err == nil && st.IsDir()
}
