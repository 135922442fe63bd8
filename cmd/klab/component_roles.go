package main

import (
	"context"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/components"
	"github.com/klab-dev/klab/cluster/runtime/docker/dockercri"
)

// specCommand describes `klab component <name> --node <node> --spec <json>`:
// one component started from the JSON of its runtime spec, the way the
// Docker runtime runs it as a container's entrypoint.
type specCommand[S any] struct {
	name  string
	short string
	// nodeOptional is set for the load balancer, whose node is not one of
	// the cluster's: --node then only names it in messages.
	nodeOptional bool
	// required are the JSON names of the spec's fields that must be set.
	required []string
	start    func(ctx context.Context, node string, spec S, logger *slog.Logger) (components.Process, func(), error)
}

func (c specCommand[S]) command() *cobra.Command {
	var node, specJSON string
	cmd := &cobra.Command{
		Use:   c.name + " --node <node> --spec <json>",
		Short: c.short,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if node == "" && !c.nodeOptional {
				return i18n.NewError("component.err.required", "node")
			}
			if specJSON == "" {
				return i18n.NewError("component.err.required", "spec")
			}
			var spec S
			if err := decodeSpec(c.name, specJSON, &spec, c.required); err != nil {
				return err
			}
			what := c.name
			if node != "" {
				what = runtime.Ref{Node: node, Component: c.name}.String()
			}
			return runForeground(cmd, what, func(ctx context.Context, logger *slog.Logger) (components.Process, func(), error) {
				return c.start(ctx, node, spec, logger)
			})
		},
	}
	cmd.Flags().StringVar(&node, "node", "", i18n.T("component.flag.node"))
	cmd.Flags().StringVar(&specJSON, "spec", "", i18n.T("component.flag.spec"))
	return cmd
}

// noRelease adapts a start that leaves nothing to release.
func noRelease(p components.Process, err error) (components.Process, func(), error) {
	return p, nil, err
}

func newComponentEtcdCmd() *cobra.Command {
	return specCommand[runtime.EtcdSpec]{
		name:     runtime.ComponentEtcd,
		short:    i18n.T("component.etcd.short"),
		required: []string{"name", "dataDir", "initialCluster", "listenClient", "listenPeer"},
		start: func(ctx context.Context, node string, spec runtime.EtcdSpec, logger *slog.Logger) (components.Process, func(), error) {
			// No fault table: in its own process, the member's network is
			// the real one, cut by the container engine.
			return noRelease(components.Etcd(ctx, spec, nil, logger))
		},
	}.command()
}

func newComponentAPIServerCmd() *cobra.Command {
	return specCommand[runtime.APIServerSpec]{
		name:     runtime.ComponentAPIServer,
		short:    i18n.T("component.kube-apiserver.short"),
		required: []string{"etcdEndpoints", "listen", "pkiDir"},
		start: func(ctx context.Context, node string, spec runtime.APIServerSpec, logger *slog.Logger) (components.Process, func(), error) {
			return noRelease(components.APIServer(ctx, runtime.Ref{Node: node, Component: runtime.ComponentAPIServer}, spec, logger))
		},
	}.command()
}

func newComponentLBCmd() *cobra.Command {
	return specCommand[runtime.LBSpec]{
		name:         runtime.ComponentLB,
		short:        i18n.T("component.lb.short"),
		nodeOptional: true,
		required:     []string{"listen", "backends", "pkiDir"},
		start: func(ctx context.Context, node string, spec runtime.LBSpec, logger *slog.Logger) (components.Process, func(), error) {
			return noRelease(components.LB(ctx, spec, logger))
		},
	}.command()
}

func newComponentSchedulerCmd() *cobra.Command {
	return specCommand[runtime.SchedulerSpec]{
		name:     runtime.ComponentScheduler,
		short:    i18n.T("component.kube-scheduler.short"),
		required: []string{"apiServer", "pkiDir"},
		start: func(ctx context.Context, node string, spec runtime.SchedulerSpec, logger *slog.Logger) (components.Process, func(), error) {
			return noRelease(components.Scheduler(ctx, node, spec, nil, logger))
		},
	}.command()
}

func newComponentControllerManagerCmd() *cobra.Command {
	return specCommand[runtime.ControllerManagerSpec]{
		name:     runtime.ComponentControllerManager,
		short:    i18n.T("component.kube-controller-manager.short"),
		required: []string{"apiServer", "pkiDir"},
		start: func(ctx context.Context, node string, spec runtime.ControllerManagerSpec, logger *slog.Logger) (components.Process, func(), error) {
			return noRelease(components.ControllerManager(ctx, node, spec, nil, logger))
		},
	}.command()
}

func newComponentKubeletCmd() *cobra.Command {
	return specCommand[runtime.KubeletSpec]{
		name:     runtime.ComponentKubelet,
		short:    i18n.T("component.kubelet.short"),
		required: []string{"apiServer", "pkiDir", "listen"},
		start: func(ctx context.Context, node string, spec runtime.KubeletSpec, logger *slog.Logger) (components.Process, func(), error) {
			pods, release, err := newPodRuntime(ctx, node, spec, logger)
			if err != nil {
				return nil, nil, err
			}
			k, err := components.Kubelet(ctx, node, spec, pods, nil, logger)
			if err != nil {
				release()
				return nil, nil, err
			}
			return k, release, nil
		},
	}.command()
}

func newComponentKubeProxyCmd() *cobra.Command {
	return specCommand[runtime.KubeProxySpec]{
		name:     runtime.ComponentKubeProxy,
		short:    i18n.T("component.kube-proxy.short"),
		required: []string{"apiServer", "pkiDir", "listen", "nodeIP"},
		start: func(ctx context.Context, node string, spec runtime.KubeProxySpec, logger *slog.Logger) (components.Process, func(), error) {
			return noRelease(components.KubeProxy(ctx, node, spec, nil, logger))
		},
	}.command()
}

func newComponentDNSCmd() *cobra.Command {
	return specCommand[runtime.DNSSpec]{
		name:     runtime.ComponentDNS,
		short:    i18n.T("component.coredns.short"),
		required: []string{"apiServer", "pkiDir", "listen"},
		start: func(ctx context.Context, node string, spec runtime.DNSSpec, logger *slog.Logger) (components.Process, func(), error) {
			return noRelease(components.DNS(ctx, node, spec, nil, logger))
		},
	}.command()
}

// newPodRuntime gives `klab component kubelet` the container runtime its
// pods run in: Docker's, through the engine's socket that the Docker runtime
// mounts into kubelet containers only, configured by the KLAB_* variables it
// sets. release only lets go of the client: pods are containers of their
// own and outlive a kubelet restart, as they do under a real kubelet.
var newPodRuntime = func(ctx context.Context, node string, spec runtime.KubeletSpec, logger *slog.Logger) (pods cri.Runtime, release func(), err error) {
	cfg, err := dockercri.ConfigFromEnv()
	if err != nil {
		return nil, nil, i18n.Wrap(err, "component.err.no-pod-runtime")
	}
	cfg.Logger = logger
	rt, err := dockercri.New(ctx, cfg)
	if err != nil {
		return nil, nil, i18n.Wrap(err, "component.err.no-pod-runtime")
	}
	return rt, func() { rt.Close() }, nil
}
