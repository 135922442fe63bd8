package dockercri

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/klab-dev/klab/cluster/dns"
)

// clusterDomain is the cluster's DNS domain, the kubelet's default
// --cluster-domain as kubeadm sets it.
const clusterDomain = "cluster.local"

// routeCommand is what the sandbox runs, through the pause image's klab,
// to send the Service range to its node: `klab component route`.
var routeCommand = []string{"/klab", "component", "route"}

// sandboxHostConfig is the pause container's host config: on the cluster
// network, and, when pods reach Services, with CAP_NET_ADMIN so that a
// route can be set in its network namespace. The pod's own containers join
// that namespace without the capability.
func (r *Runtime) sandboxHostConfig() *container.HostConfig {
	hc := &container.HostConfig{NetworkMode: container.NetworkMode(r.cfg.Network), LogConfig: logConfig()}
	if r.cfg.NodeIP != "" {
		hc.CapAdd = []string{"NET_ADMIN"}
	}
	return hc
}

// resolvConf is the resolv.conf of a pod in namespace ns with dnsPolicy
// ClusterFirst, in the kubelet's format: the cluster DNS, the search list
// of the namespace, the Service domain and the cluster domain, and
// ndots:5.
func resolvConf(nameserver, ns string) string {
	return fmt.Sprintf("search %s.svc.%s svc.%s %s\nnameserver %s\noptions ndots:5\n",
		ns, clusterDomain, clusterDomain, clusterDomain, nameserver)
}

// connectServices runs `klab component route` in a started sandbox: the
// Service range goes via the node, and resolv.conf names the cluster DNS.
// It runs to its end before RunPodSandbox returns, so no container of the
// pod starts before its route is there. Docker's own resolv.conf on a
// user-defined network names the engine's resolver (127.0.0.11); the pod's
// containers share the sandbox's file, and the engine leaves a file that
// was changed alone.
func (r *Runtime) connectServices(ctx context.Context, id, namespace string) error {
	if r.cfg.NodeIP == "" {
		return nil
	}
	nameserver, err := dns.ClusterIP(r.cfg.ServiceCIDR)
	if err != nil {
		return fmt.Errorf("route Services in the sandbox: %w", err)
	}
	cmd := append(append([]string{}, routeCommand...), r.cfg.ServiceCIDR, "--via", r.cfg.NodeIP,
		"--resolv-conf", resolvConf(nameserver, namespace))
	exec, err := r.docker.ContainerExecCreate(ctx, id, container.ExecOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return fmt.Errorf("route Services in the sandbox: %w", err)
	}
	resp, err := r.docker.ContainerExecAttach(ctx, exec.ID, container.ExecAttachOptions{})
	if err != nil {
		return fmt.Errorf("route Services in the sandbox: %w", err)
	}
	defer resp.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, resp.Reader); err != nil {
		return fmt.Errorf("route Services in the sandbox: %w", err)
	}
	inspect, err := r.docker.ContainerExecInspect(ctx, exec.ID)
	if err != nil {
		return fmt.Errorf("route Services in the sandbox: %w", err)
	}
	if inspect.ExitCode != 0 {
		return fmt.Errorf("route Services in the sandbox: %s exited %d: %s", strings.Join(routeCommand, " "), inspect.ExitCode, strings.TrimSpace(out.String()))
	}
	return nil
}
