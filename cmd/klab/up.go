package main

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
)

// closeTimeout bounds a graceful stop; members still running after it are
// killed.
const closeTimeout = 30 * time.Second

func newUpCmd() *cobra.Command {
	spec := lab.DefaultSpec()
	var retain bool
	cmd := &cobra.Command{
		Use:   "up",
		Short: i18n.T("up.short"),
		Long:  i18n.T("up.long"),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runUp(cmd, spec, retain)
		},
	}
	addNameFlag(cmd, &spec.Name)
	cmd.Flags().IntVar(&spec.Masters, "masters", spec.Masters, i18n.T("up.flag.masters"))
	cmd.Flags().IntVar(&spec.Workers, "workers", spec.Workers, i18n.T("up.flag.workers"))
	cmd.Flags().StringVar(&spec.Runtime, "runtime", spec.Runtime, i18n.T("up.flag.runtime"))
	cmd.Flags().Float64Var(&spec.Speed, "speed", spec.Speed, i18n.T("up.flag.speed"))
	cmd.Flags().BoolVar(&spec.NoFsync, "no-fsync", false, i18n.T("up.flag.no-fsync"))
	cmd.Flags().Int64Var(&spec.QuotaBackendBytes, "quota-backend-bytes", 0, i18n.T("up.flag.quota-backend-bytes"))
	cmd.Flags().BoolVar(&retain, "retain", false, i18n.T("up.flag.retain"))
	return cmd
}

func runUp(cmd *cobra.Command, spec lab.Spec, retain bool) error {
	out := cmd.OutOrStdout()
	if err := spec.Validate(); err != nil {
		return err
	}
	rt, notDocker, err := lab.ResolveRuntime(cmd.Context(), spec.Runtime)
	if err != nil {
		return err
	}
	if spec.Runtime == lab.RuntimeAuto {
		if rt == lab.RuntimeDocker {
			fmt.Fprintln(out, i18n.T("up.runtime-auto-docker"))
		} else {
			fmt.Fprintln(out, i18n.T("up.runtime-auto-local", notDocker))
		}
	}
	spec.Runtime = rt

	// The first Ctrl-C stops the cluster cleanly; once it is handled, the
	// signal's default action returns, so a second one ends klab at once.
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	steps := newStepPrinter(out)
	fmt.Fprintln(out, i18n.T("up.creating", spec.Name, spec.Masters, spec.Workers))
	c, err := lab.Up(ctx, spec, lab.Options{Progress: steps.progress, Retain: retain, BuildID: dockerBuildID()})
	if err != nil {
		// Ctrl-C here, or klab down from another terminal, cancelled the
		// start; Up has already undone it.
		if errors.Is(err, context.Canceled) {
			return i18n.NewError("up.err.interrupted", spec.Name)
		}
		return err
	}
	printReady(cmd, c)
	if c.Detached() {
		// A Docker cluster runs in its containers: the prompt comes back.
		return nil
	}

	select {
	case <-ctx.Done():
	case <-c.ShutdownRequested():
	}
	stop()
	fmt.Fprintln(out)
	fmt.Fprintln(out, i18n.T("up.stopping", spec.Name))
	closeCtx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	err = c.Close(closeCtx, steps.progress)
	if c.ShutdownReason() == "down" {
		fmt.Fprintln(out, i18n.T("up.stopped-by-down", spec.Name))
	} else {
		fmt.Fprintln(out, i18n.T("up.stopped", spec.Name, c.Dir(), nameHint(spec.Name)))
	}
	return err
}

func printReady(cmd *cobra.Command, c *lab.Cluster) {
	out := cmd.OutOrStdout()
	info := c.Info()
	hint := nameHint(info.Name)
	fmt.Fprintln(out)
	fmt.Fprintln(out, i18n.T("up.ready", info.Name, len(info.Members), len(info.Nodes)))
	fmt.Fprintln(out, i18n.T("up.ready.endpoints", strings.Join(info.EtcdEndpoints, ",")))
	if info.APIServer != "" {
		fmt.Fprintln(out, i18n.T("up.ready.apiserver", info.APIServer))
		fmt.Fprintln(out, i18n.T("up.ready.kubeconfig", info.Kubeconfig))
	}
	fmt.Fprintln(out, i18n.T("up.ready.state", c.Dir()))
	fmt.Fprintln(out)
	fmt.Fprintln(out, i18n.T("up.ready.try"))
	for _, line := range []string{
		"klab status" + hint,
		"klab etcdctl" + hint + " member list -w table",
		"klab etcdctl" + hint + " put greeting hello",
		"klab etcdctl" + hint + " get greeting",
		"klab kubectl" + hint + " get namespaces",
		"klab etcdctl" + hint + " get /registry --prefix --keys-only",
		"klab chaos kill leader" + hint,
	} {
		fmt.Fprintln(out, "  "+line)
	}
	fmt.Fprintln(out)
	if c.Detached() {
		fmt.Fprintln(out, i18n.T("up.ready.detached", info.Name, hint))
		return
	}
	fmt.Fprintln(out, i18n.T("up.ready.stop", hint))
}

// dockerBuildID tags the node image: the build's ID when the Makefile
// stamped one, else empty, so that the image is named after the binary's
// own hash.
func dockerBuildID() string {
	if buildID == "unknown" {
		return ""
	}
	return buildID
}
