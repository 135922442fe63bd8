package main

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
)

func newTrafficCmd() *cobra.Command {
	var (
		name, namespace, node, port, output, clientIP string
		count, concurrency                            int
		timeout                                       time.Duration
	)
	cmd := &cobra.Command{
		Use:   "traffic svc/<name>",
		Short: i18n.T("traffic.short"),
		Long:  i18n.T("traffic.long"),
		Args:  exactArgs(1, "svc/<name>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := parseServiceArg(args[0])
			if err != nil {
				return err
			}
			if output != "table" && output != "json" {
				return i18n.NewError("status.err.output", output)
			}
			if count < 1 {
				return i18n.NewError("traffic.err.count", count)
			}
			if concurrency < 1 {
				return i18n.NewError("traffic.err.concurrency", concurrency)
			}
			report, err := lab.Traffic(cmd.Context(), name, lab.TrafficOptions{
				Namespace: namespace, Service: svc, Port: port, Node: node,
				Count: count, Concurrency: concurrency, Timeout: timeout, ClientIP: clientIP,
			})
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), report)
			}
			return report.Write(cmd.OutOrStdout(), i18n.Current())
		},
	}
	addNameFlag(cmd, &name)
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", i18n.T("traffic.flag.namespace"))
	cmd.Flags().StringVar(&node, "node", "", i18n.T("traffic.flag.node"))
	cmd.Flags().StringVar(&port, "port", "", i18n.T("traffic.flag.port"))
	cmd.Flags().IntVar(&count, "count", 300, i18n.T("traffic.flag.count"))
	cmd.Flags().IntVar(&concurrency, "concurrency", 8, i18n.T("traffic.flag.concurrency"))
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, i18n.T("traffic.flag.timeout"))
	cmd.Flags().StringVar(&clientIP, "client-ip", "", i18n.T("traffic.flag.client-ip"))
	cmd.Flags().StringVarP(&output, "output", "o", "table", i18n.T("status.flag.output"))
	return cmd
}

// parseServiceArg takes "svc/<name>", "service/<name>", "services/<name>"
// or a bare name, as kubectl does.
func parseServiceArg(s string) (string, error) {
	kind, name, ok := strings.Cut(s, "/")
	if !ok {
		kind, name = "svc", s
	}
	switch kind {
	case "svc", "service", "services":
	default:
		return "", i18n.NewError("traffic.err.target", s)
	}
	if name == "" || strings.Contains(name, "/") {
		return "", i18n.NewError("traffic.err.target", s)
	}
	return name, nil
}
