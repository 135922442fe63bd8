package local

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/controller"
	"github.com/klab-dev/klab/cluster/kubelet"
	"github.com/klab-dev/klab/cluster/kubelet/inprocess"
	"github.com/klab-dev/klab/cluster/lab/pki"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/scheduler"
	"github.com/klab-dev/klab/cluster/scheduler/plugins"
	"github.com/klab-dev/klab/cluster/timing"
)

// clientComponent is a component that is a client of the API server: the
// scheduler, the controller manager, a kubelet.
type clientComponent interface {
	Stop() error
	Kill()
	Done() <-chan struct{}
	Err() error
}

// clientProcess runs a client component behind a network gate, which lets
// the runtime pause, kill and partition it as the Docker engine would a
// container.
type clientProcess struct {
	comp clientComponent
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

// restConfig is the component's client configuration: its own identity,
// dialling through its gate.
func restConfig(spec runtime.ClientSpec, user string, gate *netGate) (*rest.Config, *pki.PKI, error) {
	p, err := pki.Load(spec.PKIDir)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := p.RESTConfig(spec.Cluster, spec.APIServer, user)
	if err != nil {
		return nil, nil, err
	}
	cfg.Dial = gate.DialContext
	return cfg, p, nil
}

func (r *Runtime) startScheduler(ctx context.Context, ref runtime.Ref, spec runtime.SchedulerSpec, logger *slog.Logger) (process, error) {
	gate := r.newGate(ref.Node)
	cfg, _, err := restConfig(spec.ClientSpec, auth.KubeScheduler, gate)
	if err != nil {
		gate.kill()
		return nil, err
	}
	s, err := scheduler.New(scheduler.Config{
		REST: cfg, Identity: ref.Node, Profile: plugins.Default(), Speed: timing.Speed(spec.Speed),
		DebugListen: spec.DebugListen, Logger: logger,
	})
	if err == nil {
		err = s.Start(ctx)
	}
	if err != nil {
		gate.kill()
		return nil, err
	}
	return &clientProcess{comp: s, gate: gate}, nil
}

func (r *Runtime) startControllerManager(ctx context.Context, ref runtime.Ref, spec runtime.ControllerManagerSpec, logger *slog.Logger) (process, error) {
	gate := r.newGate(ref.Node)
	cfg, _, err := restConfig(spec.ClientSpec, auth.KubeControllerManager, gate)
	if err != nil {
		gate.kill()
		return nil, err
	}
	m, err := controller.New(controller.Config{
		REST: cfg, Identity: ref.Node, Speed: timing.Speed(spec.Speed), DebugListen: spec.DebugListen, Logger: logger,
	})
	if err == nil {
		err = m.Start(ctx)
	}
	if err != nil {
		gate.kill()
		return nil, err
	}
	return &clientProcess{comp: m, gate: gate}, nil
}

// startKubelet runs a kubelet with its pods. In the local runtime a node's
// pods live inside its kubelet's process: stopping or killing the kubelet
// stops them too (in Docker they are containers of their own and outlive a
// kubelet restart).
func (r *Runtime) startKubelet(ctx context.Context, ref runtime.Ref, spec runtime.KubeletSpec, logger *slog.Logger) (process, error) {
	gate := r.newGate(ref.Node)
	cfg, p, err := restConfig(spec.ClientSpec, auth.NodeUser(ref.Node), gate)
	if err != nil {
		gate.kill()
		return nil, err
	}
	capacity, err := nodeCapacity(spec)
	if err != nil {
		gate.kill()
		return nil, err
	}
	tlsCfg, err := p.ServerTLSConfig()
	if err != nil {
		gate.kill()
		return nil, err
	}
	pods, err := inprocess.New(inprocess.Config{
		NodeName: ref.Node, PodCIDR: spec.PodCIDR, LogDir: filepath.Join(r.NodeDir(ref.Node), "pods"), Logger: logger,
	})
	if err != nil {
		gate.kill()
		return nil, err
	}
	var static []kubelet.StaticPod
	for _, sp := range spec.StaticPods {
		static = append(static, kubelet.StaticPod{Name: sp.Name, Image: sp.Image, HealthURL: sp.HealthURL})
	}
	k, err := kubelet.New(kubelet.Config{
		NodeName: ref.Node, REST: cfg, Runtime: pods, Speed: timing.Speed(spec.Speed),
		ControlPlane: spec.ControlPlane, Capacity: capacity, NodeIP: spec.NodeIP, PodCIDR: spec.PodCIDR,
		Listen: spec.Listen, TLS: tlsCfg.Clone(), CAPool: p.CertPool(), StaticPods: static, Logger: logger,
	})
	if err == nil {
		err = k.Start(ctx)
	}
	if err != nil {
		gate.kill()
		pods.Close()
		return nil, err
	}
	return &clientProcess{comp: k, gate: gate, release: func() { pods.Close() }}, nil
}

func nodeCapacity(spec runtime.KubeletSpec) (corev1.ResourceList, error) {
	rl := corev1.ResourceList{}
	for name, v := range map[corev1.ResourceName]string{corev1.ResourceCPU: spec.CPU, corev1.ResourceMemory: spec.Memory} {
		if v == "" {
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
		rl[name] = q
	}
	if spec.Pods > 0 {
		rl[corev1.ResourcePods] = *resource.NewQuantity(int64(spec.Pods), resource.DecimalSI)
	}
	return rl, nil
}
