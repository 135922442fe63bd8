package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
)

// chaosTimeout bounds one chaos operation; a restart waits for the member
// to serve again.
const chaosTimeout = 60 * time.Second

func newChaosCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: i18n.T("chaos.short"),
		Long:  i18n.T("chaos.long"),
		// Without a RunE cobra would print help and succeed on a mistyped
		// operation; an unknown operation must fail.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return i18n.NewError("cli.err.unknown-command", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
	for _, op := range []lab.ChaosOp{lab.OpKill, lab.OpRestart, lab.OpPause, lab.OpResume} {
		cmd.AddCommand(newChaosTargetCmd(op))
	}
	cmd.AddCommand(newPartitionCmd(), newHealCmd())
	return cmd
}

// newChaosTargetCmd builds kill, restart, pause and resume, which differ only
// in the operation.
func newChaosTargetCmd(op lab.ChaosOp) *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   string(op) + " <target>",
		Short: i18n.T("chaos." + string(op) + ".short"),
		Long:  i18n.T("chaos.target.long", i18n.T("chaos."+string(op)+".short")),
		Args:  exactArgs(1, "<target>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runChaos(cmd, name, lab.ChaosRequest{Op: op, Targets: splitList(args[0])})
		},
	}
	addNameFlag(cmd, &name)
	return cmd
}

func newPartitionCmd() *cobra.Command {
	var (
		name string
		from string
	)
	cmd := &cobra.Command{
		Use:   "partition <target>[,<target>...]",
		Short: i18n.T("chaos.partition.short"),
		Long:  i18n.T("chaos.partition.long"),
		Args:  exactArgs(1, "<target>[,<target>...]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runChaos(cmd, name, lab.ChaosRequest{Op: lab.OpPartition, Targets: splitList(args[0]), From: splitList(from)})
		},
	}
	addNameFlag(cmd, &name)
	cmd.Flags().StringVar(&from, "from", "", i18n.T("chaos.flag.from"))
	return cmd
}

func newHealCmd() *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "heal",
		Short: i18n.T("chaos.heal.short"),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runChaos(cmd, name, lab.ChaosRequest{Op: lab.OpHeal})
		},
	}
	addNameFlag(cmd, &name)
	return cmd
}

func runChaos(cmd *cobra.Command, name string, req lab.ChaosRequest) error {
	ctx, cancel := context.WithTimeout(cmd.Context(), chaosTimeout)
	defer cancel()
	res, err := lab.Chaos(ctx, name, req)
	if err != nil {
		return err
	}
	fmt.Fprintln(cmd.OutOrStdout(), " ✓ "+describeChaos(res))
	return nil
}

// describeChaos says in one line what an operation did.
func describeChaos(res *lab.ChaosResult) string {
	switch res.Op {
	case lab.OpHeal:
		return i18n.T("chaos.done.heal")
	case lab.OpPartition:
		return i18n.T("chaos.done.partition", strings.Join(res.Side, ", "), strings.Join(res.From, ", "))
	}
	targets := make([]string, 0, len(res.Targets))
	for _, t := range res.Targets {
		s := t.String()
		switch {
		case t.Leader && t.Component == runtime.ComponentEtcd:
			s = i18n.T("chaos.done.leader", s, res.LeaderTerm)
		case t.Leader:
			s = i18n.T("chaos.done.lease-holder", s, metav1.NamespaceSystem+"/"+t.Component)
		}
		targets = append(targets, s)
	}
	return i18n.T("chaos.done."+string(res.Op), strings.Join(targets, ", "))
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
