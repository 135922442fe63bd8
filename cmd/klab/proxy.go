package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
)

// proxySwitchTimeout bounds the wait for every kube-proxy to follow a mode
// change.
const proxySwitchTimeout = 20 * time.Second

func newProxyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "proxy <status|rules|mode>",
		Short: i18n.T("proxy.short"),
		Long:  i18n.T("proxy.long"),
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return i18n.NewError("cli.err.unknown-command", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(newProxyStatusCmd(), newProxyRulesCmd(), newProxyModeCmd())
	return cmd
}

func newProxyStatusCmd() *cobra.Command {
	var name, output string
	cmd := &cobra.Command{
		Use:   "status",
		Short: i18n.T("proxy.status.short"),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "table" && output != "json" {
				return i18n.NewError("status.err.output", output)
			}
			all, err := lab.ProxyStatuses(cmd.Context(), name)
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), all)
			}
			printProxyStatuses(cmd.OutOrStdout(), all)
			return nil
		},
	}
	addNameFlag(cmd, &name)
	cmd.Flags().StringVarP(&output, "output", "o", "table", i18n.T("status.flag.output"))
	return cmd
}

func printProxyStatuses(w io.Writer, all []lab.NodeProxy) {
	var t table
	t.add(i18n.T("proxy.col.node"), i18n.T("proxy.col.mode"), i18n.T("proxy.col.services"), i18n.T("proxy.col.endpoints"),
		i18n.T("proxy.col.rules"), i18n.T("proxy.col.last-sync"), i18n.T("proxy.col.syncs"), i18n.T("proxy.col.connections"))
	for _, np := range all {
		if np.Status == nil {
			t.add(np.Node, i18n.T("proxy.unreachable"), "-", "-", "-", "-", "-", "-")
			continue
		}
		s := np.Status
		mode := s.Mode
		if s.IPVSScheduler != "" && s.Mode == "ipvs" {
			mode += " (" + s.IPVSScheduler + ")"
		}
		t.add(np.Node, mode, strconv.Itoa(s.ServicePorts), strconv.Itoa(s.Endpoints), strconv.Itoa(s.Rules),
			s.LastSync.Duration.Round(time.Microsecond).String(), strconv.FormatUint(s.Syncs, 10),
			i18n.T("proxy.connections", s.Connections.Total, s.Connections.Failed, s.Connections.Retried))
	}
	t.write(w)
	for _, np := range all {
		if np.Status == nil {
			fmt.Fprintf(w, "%s: %s\n", np.Node, np.Error)
		} else if np.Status.ConfigError != "" {
			fmt.Fprintln(w, i18n.T("proxy.config-error", np.Node, np.Status.ConfigError))
		}
	}
}

func newProxyRulesCmd() *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "rules [node]",
		Short: i18n.T("proxy.rules.short"),
		Long:  i18n.T("proxy.rules.long"),
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			node := ""
			if len(args) == 1 {
				node = args[0]
			}
			rules, _, err := lab.ProxyRules(cmd.Context(), name, node)
			if err != nil {
				return err
			}
			_, err = io.WriteString(cmd.OutOrStdout(), rules)
			return err
		},
	}
	addNameFlag(cmd, &name)
	return cmd
}

func newProxyModeCmd() *cobra.Command {
	var name, scheduler string
	cmd := &cobra.Command{
		Use:   "mode [userspace|iptables|ipvs|nftables]",
		Short: i18n.T("proxy.mode.short"),
		Long:  i18n.T("proxy.mode.long"),
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			out := cmd.OutOrStdout()
			if len(args) == 0 {
				mode, sched, _, err := lab.ProxyMode(ctx, name)
				if err != nil {
					return err
				}
				if sched != "" {
					mode += " (" + sched + ")"
				}
				fmt.Fprintln(out, i18n.T("proxy.mode.current", mode))
				all, err := lab.ProxyStatuses(ctx, name)
				if err != nil {
					return err
				}
				printProxyStatuses(out, all)
				return nil
			}
			mode, err := lab.ParseProxyMode(args[0])
			if err != nil {
				return err
			}
			prev, err := lab.SetProxyMode(ctx, name, mode, scheduler)
			if err != nil {
				return err
			}
			fmt.Fprintln(out, i18n.T("proxy.mode.set", prev, mode))
			wctx, cancel := context.WithTimeout(ctx, proxySwitchTimeout)
			defer cancel()
			all, err := lab.WaitProxyMode(wctx, name, mode, proxySwitchTimeout)
			if all != nil {
				printProxyStatuses(out, all)
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(out, i18n.T("proxy.mode.restart-note"))
			return nil
		},
	}
	addNameFlag(cmd, &name)
	cmd.Flags().StringVar(&scheduler, "scheduler", "", i18n.T("proxy.flag.scheduler"))
	return cmd
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
