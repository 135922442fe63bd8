package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
)

// snapshotTimeout bounds a save or a restore; a restore stops and starts
// every component.
const snapshotTimeout = 3 * time.Minute

func newSnapshotCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: i18n.T("snapshot.short"),
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return i18n.NewError("cli.err.unknown-command", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(newSnapshotSaveCmd(), newSnapshotListCmd(), newSnapshotRestoreCmd())
	return cmd
}

func newSnapshotSaveCmd() *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "save [file]",
		Short: i18n.T("snapshot.save.short"),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return i18n.NewError("cli.err.no-args", cmd.CommandPath(), args[1])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := lab.ValidateName(name); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), snapshotTimeout)
			defer cancel()
			file := ""
			if len(args) == 1 {
				file = args[0]
			}
			path, err := lab.SaveSnapshot(ctx, name, file)
			if err != nil {
				return err
			}
			size := "?"
			if list, err := lab.ListSnapshots(name); err == nil {
				for _, s := range list {
					if s.Path == path {
						size = humanBytes(s.Size)
					}
				}
			}
			fmt.Fprintln(cmd.OutOrStdout(), " ✓ "+i18n.T("snapshot.saved", path, size))
			return nil
		},
	}
	addNameFlag(cmd, &name)
	return cmd
}

func newSnapshotListCmd() *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "list",
		Short: i18n.T("snapshot.list.short"),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := lab.ValidateName(name); err != nil {
				return err
			}
			list, err := lab.ListSnapshots(name)
			if err != nil {
				return err
			}
			if len(list) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), i18n.T("snapshot.none", name))
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSIZE\tSAVED\tPATH")
			for _, s := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, humanBytes(s.Size), s.ModTime.Local().Format("2006-01-02 15:04:05"), s.Path)
			}
			return tw.Flush()
		},
	}
	addNameFlag(cmd, &name)
	return cmd
}

func newSnapshotRestoreCmd() *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "restore <file|name>",
		Short: i18n.T("snapshot.restore.short"),
		Args:  exactArgs(1, "<file|name>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := lab.ValidateName(name); err != nil {
				return err
			}
			path, err := lab.ResolveSnapshot(name, args[0])
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), snapshotTimeout)
			defer cancel()
			res, err := lab.Restore(ctx, name, path)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), " ✓ "+i18n.T("snapshot.restored", res.Snapshot, res.Elapsed.Round(10*time.Millisecond), res.ClusterID, res.OldClusterID, res.Leader, res.Term))
			return nil
		},
	}
	addNameFlag(cmd, &name)
	return cmd
}

// humanBytes writes a size as etcdctl and ls -h do.
func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
