package main

import (
	"fmt"
	"net/netip"
	"os"

	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/internal/netroute"
)

// resolvConfPath is the file a container's resolver reads; in a Docker
// sandbox it is the engine's bind mount, which the pod's containers share.
var resolvConfPath = "/etc/resolv.conf"

// newComponentRouteCmd is `klab component route <cidr> --via <ip>`: run by
// the Docker CRI in a pod's sandbox (docker exec, with the sandbox's
// NET_ADMIN) before any of the pod's containers starts, it sends the
// Service range to the pod's node, whose kube-proxy answers every
// ClusterIP. With --resolv-conf it also writes the pod's resolv.conf, as
// a CRI writes the DNS config the kubelet hands it: Docker's own file on a
// user-defined network names the engine's resolver, 127.0.0.11, instead of
// the cluster DNS.
func newComponentRouteCmd() *cobra.Command {
	var via, resolv string
	cmd := &cobra.Command{
		Use:    "route <cidr> --via <ip>",
		Short:  i18n.T("component.route.short"),
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if via == "" {
				return i18n.NewError("component.err.required", "via")
			}
			dst, err := netip.ParsePrefix(args[0])
			if err != nil {
				return i18n.Wrap(err, "component.route.err.bad", args[0], via)
			}
			gw, err := netip.ParseAddr(via)
			if err != nil {
				return i18n.Wrap(err, "component.route.err.bad", args[0], via)
			}
			if err := netroute.ReplaceVia(dst, gw); err != nil {
				return i18n.Wrap(err, "component.route.err.set", dst.String(), gw.String())
			}
			if cmd.Flags().Changed("resolv-conf") {
				if err := os.WriteFile(resolvConfPath, []byte(resolv), 0o644); err != nil {
					return i18n.Wrap(err, "component.route.err.resolv", resolvConfPath)
				}
			}
			fmt.Fprintln(cmd.OutOrStdout(), i18n.T("component.route.done", dst.String(), gw.String()))
			return nil
		},
	}
	cmd.Flags().StringVar(&via, "via", "", i18n.T("component.route.flag.via"))
	cmd.Flags().StringVar(&resolv, "resolv-conf", "", i18n.T("component.route.flag.resolv-conf"))
	return cmd
}
