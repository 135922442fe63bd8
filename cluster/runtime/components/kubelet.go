package components

import (
	"context"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/kubelet"
	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/timing"
)

// Kubelet starts the kubelet of node as system:node:<node>, running its
// pods in pods. It serves HTTPS on spec.Listen with its own serving
// certificate from its credentials directory. It returns once the node is registered, retrying until ctx
// ends.
//
// The caller owns pods: the kubelet neither closes it when it stops nor
// stops the pods in it, as a real kubelet's restart leaves its containers
// running.
func Kubelet(ctx context.Context, node string, spec runtime.KubeletSpec, pods cri.Runtime, dial DialFunc, logger *slog.Logger) (Process, error) {
	cfg, p, err := restConfig(spec.ClientSpec, auth.NodeUser(node), dial)
	if err != nil {
		return nil, err
	}
	capacity, err := nodeCapacity(spec)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := p.ServingTLSConfig()
	if err != nil {
		return nil, err
	}
	k, err := kubelet.New(kubelet.Config{
		NodeName: node, REST: cfg, Runtime: pods, Speed: timing.Speed(spec.Speed),
		ControlPlane: spec.ControlPlane, Capacity: capacity, NodeIP: spec.NodeIP, PodCIDR: spec.PodCIDR,
		Listen: spec.Listen, TLS: tlsCfg, CAPool: p.CertPool(), RootDir: spec.RootDir, StaticPods: staticPods(spec.StaticPods), Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	if err := k.Start(ctx); err != nil {
		return nil, err
	}
	return k, nil
}

// nodeCapacity is the node's capacity from the spec's quantities; a
// quantity left empty is left out, and the kubelet applies its default.
func nodeCapacity(spec runtime.KubeletSpec) (corev1.ResourceList, error) {
	rl := corev1.ResourceList{}
	for _, r := range []struct {
		name  corev1.ResourceName
		value string
	}{{corev1.ResourceCPU, spec.CPU}, {corev1.ResourceMemory, spec.Memory}} {
		if r.value == "" {
			continue
		}
		q, err := resource.ParseQuantity(r.value)
		if err != nil {
			return nil, fmt.Errorf("node %s %q: %w", r.name, r.value, err)
		}
		rl[r.name] = q
	}
	if spec.Pods > 0 {
		rl[corev1.ResourcePods] = *resource.NewQuantity(int64(spec.Pods), resource.DecimalSI)
	}
	return rl, nil
}

// staticPods converts the spec's static pods to the kubelet's.
func staticPods(specs []runtime.StaticPodSpec) []kubelet.StaticPod {
	var static []kubelet.StaticPod
	for _, sp := range specs {
		var ports []corev1.ContainerPort
		for _, p := range sp.Ports {
			ports = append(ports, corev1.ContainerPort{Name: p.Name, ContainerPort: p.Port, HostPort: p.Port, Protocol: corev1.Protocol(p.Protocol)})
		}
		static = append(static, kubelet.StaticPod{Name: sp.Name, Image: sp.Image, HealthURL: sp.HealthURL, Ports: ports, Labels: sp.Labels})
	}
	return static
}
