package local

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/klab-dev/klab/cluster/kubelet/inprocess"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/components"
)

// clientProcess runs a client component (the scheduler, the controller
// manager, a kubelet) behind a network gate, which lets the runtime pause,
// kill and partition it as the Docker engine would a container.
type clientProcess struct {
	comp components.Process
	gate *netGate
	// release frees what the process owns beyond the component (a
	// kubelet's pods).
	release func()
}

func (p *clientProcess) Stop() error {
	err := p.comp.Stop()
	p.gate.close()
	if p.release != nil {
		p.release()
	}
	return err
}

func (p *clientProcess) Kill() {
	// The network goes first, so nothing the component does while dying
	// reaches the API server, as with kill -9.
	p.gate.kill()
	p.comp.Kill()
	if p.release != nil {
		p.release()
	}
}

func (p *clientProcess) Pause() error          { p.gate.pause(); return nil }
func (p *clientProcess) Resume() error         { p.gate.resume(); return nil }
func (p *clientProcess) Done() <-chan struct{} { return p.comp.Done() }
func (p *clientProcess) Err() error            { return p.comp.Err() }

// startBehindGate starts a client component of node that dials through a
// new gate of its own. release, if set, frees what the process owns beyond
// the component; it runs when the process is stopped or killed, or fails
// to start.
func (r *Runtime) startBehindGate(node string, release func(), start func(components.DialFunc) (components.Process, error)) (process, error) {
	gate := r.newGate(node)
	comp, err := start(gate.DialContext)
	if err != nil {
		gate.kill()
		if release != nil {
			release()
		}
		return nil, err
	}
	return &clientProcess{comp: comp, gate: gate, release: release}, nil
}

func (r *Runtime) startScheduler(ctx context.Context, ref runtime.Ref, spec runtime.SchedulerSpec, logger *slog.Logger) (process, error) {
	return r.startBehindGate(ref.Node, nil, func(dial components.DialFunc) (components.Process, error) {
		return components.Scheduler(ctx, ref.Node, spec, dial, logger)
	})
}

func (r *Runtime) startControllerManager(ctx context.Context, ref runtime.Ref, spec runtime.ControllerManagerSpec, logger *slog.Logger) (process, error) {
	return r.startBehindGate(ref.Node, nil, func(dial components.DialFunc) (components.Process, error) {
		return components.ControllerManager(ctx, ref.Node, spec, dial, logger)
	})
}

// startKubelet runs a kubelet with its pods. In the local runtime a node's
// pods live inside its kubelet's process: stopping or killing the kubelet
// stops them too (in Docker they are containers of their own and outlive a
// kubelet restart).
func (r *Runtime) startKubelet(ctx context.Context, ref runtime.Ref, spec runtime.KubeletSpec, logger *slog.Logger) (process, error) {
	pods, err := inprocess.New(inprocess.Config{
		NodeName: ref.Node, PodCIDR: spec.PodCIDR, LogDir: filepath.Join(r.NodeDir(ref.Node), "pods"), Logger: logger,
		Dial: r.podDial(ref.Node),
	})
	if err != nil {
		return nil, err
	}
	if spec.RootDir == "" {
		// The pods' volumes; containers see them through links in
		// their filesystems.
		spec.RootDir = filepath.Join(r.NodeDir(ref.Node), "kubelet")
	}
	return r.startBehindGate(ref.Node, func() { pods.Close() }, func(dial components.DialFunc) (components.Process, error) {
		return components.Kubelet(ctx, ref.Node, spec, pods, dial, logger)
	})
}

// startKubeProxy runs a kube-proxy. Its connections to the endpoints it
// proxies to go through the gate as well, so a paused or killed kube-proxy
// stops forwarding as a frozen or dead process would.
func (r *Runtime) startKubeProxy(ctx context.Context, ref runtime.Ref, spec runtime.KubeProxySpec, logger *slog.Logger) (process, error) {
	return r.startBehindGate(ref.Node, nil, func(dial components.DialFunc) (components.Process, error) {
		return components.KubeProxy(ctx, ref.Node, spec, dial, logger)
	})
}

// startDNS runs the cluster DNS; its watches go through the gate, so a
// partitioned master's DNS answers from what it saw last, as a real one
// would.
func (r *Runtime) startDNS(ctx context.Context, ref runtime.Ref, spec runtime.DNSSpec, logger *slog.Logger) (process, error) {
	return r.startBehindGate(ref.Node, nil, func(dial components.DialFunc) (components.Process, error) {
		return components.DNS(ctx, ref.Node, spec, dial, logger)
	})
}
