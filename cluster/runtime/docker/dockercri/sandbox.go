package dockercri

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

const (
	// pauseCommand is what the pause image runs: its entrypoint is
	// `/klab component`, so this is `klab component pause`, which sleeps
	// until SIGTERM.
	pauseCommand = "pause"
	// maxAddressConflicts bounds how many addresses RunPodSandbox tries
	// that Docker says something else on the network holds.
	maxAddressConflicts = 16
	// cleanupTimeout bounds removing what a failed step left behind, which
	// is done even when the caller's context is done.
	cleanupTimeout = 30 * time.Second
)

// errAddressInUse: Docker refused a sandbox's address because a container
// the runtime does not know of (one not of this node) holds it.
var errAddressInUse = errors.New("address already in use on the network")

// podObjectName is dockershim's name for a pod's container, or for its
// sandbox when container is "POD".
func podObjectName(cluster, container, pod, namespace, uid string, attempt int) string {
	return labels.SanitizeName(fmt.Sprintf("%s_k8s_%s_%s_%s_%s_%d", labels.Prefix(cluster), container, pod, namespace, uid, attempt))
}

// RunPodSandbox starts a pause container for the pod on the cluster
// network, at the first address of the pod CIDR that no running sandbox of
// the node holds.
func (r *Runtime) RunPodSandbox(ctx context.Context, cfg cri.SandboxConfig) (cri.Sandbox, error) {
	if r.closed.Load() {
		return cri.Sandbox{}, errClosed
	}
	if cfg.Name == "" || cfg.Namespace == "" || cfg.PodUID == "" {
		return cri.Sandbox{}, errors.New("run pod sandbox: name, namespace and UID are required")
	}
	pod := cfg.Namespace + "/" + cfg.Name
	r.sandboxMu.Lock()
	defer r.sandboxMu.Unlock()
	existing, err := r.list(ctx, labels.RoleSandbox)
	if err != nil {
		return cri.Sandbox{}, fmt.Errorf("run pod sandbox for pod %s: list sandboxes: %w", pod, err)
	}
	taken := map[netip.Addr]bool{}
	attempt := 0
	for _, sb := range existing {
		l := sb.Config.Labels
		// A stopped pause container no longer holds its address.
		if ip, err := netip.ParseAddr(l[labels.IP]); err == nil && sb.State.Status != "exited" && sb.State.Status != "dead" {
			taken[ip] = true
		}
		if a, err := strconv.Atoi(l[labels.Attempt]); err == nil && l[labels.PodUID] == cfg.PodUID && a >= attempt {
			attempt = a + 1
		}
	}
	for conflicts := 0; ; conflicts++ {
		ip, err := firstFreeIP(r.podCIDR, taken)
		if err != nil {
			return cri.Sandbox{}, fmt.Errorf("run pod sandbox for pod %s: %w", pod, err)
		}
		id, err := r.startSandbox(ctx, cfg, ip, attempt)
		if errors.Is(err, errAddressInUse) && conflicts < maxAddressConflicts {
			r.logger.Warn("Pod address is taken on the network, trying the next", "pod", pod, "ip", ip)
			taken[ip] = true
			continue
		}
		if err != nil {
			return cri.Sandbox{}, fmt.Errorf("run pod sandbox for pod %s: %w", pod, err)
		}
		r.logger.Info("Started pod sandbox", "pod", pod, "sandbox", id, "ip", ip)
		return cri.Sandbox{ID: id, IP: ip.String()}, nil
	}
}

// startSandbox creates and starts a pause container at ip. What it
// created is removed again if it cannot start.
func (r *Runtime) startSandbox(ctx context.Context, cfg cri.SandboxConfig, ip netip.Addr, attempt int) (string, error) {
	hostname := cfg.Hostname
	if hostname == "" {
		hostname = cfg.Name
	}
	l := r.ownLabels(labels.RoleSandbox)
	l[labels.IP] = ip.String()
	l[labels.PodName] = cfg.Name
	l[labels.PodNamespace] = cfg.Namespace
	l[labels.PodUID] = cfg.PodUID
	l[labels.Attempt] = strconv.Itoa(attempt)
	l[labels.PodLabels] = encodeCRILabels(cfg.Labels)
	created, err := r.docker.ContainerCreate(ctx,
		&container.Config{Image: r.cfg.PauseImage, Cmd: []string{pauseCommand}, Hostname: hostname, Labels: l},
		r.sandboxHostConfig(),
		&network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			r.cfg.Network: {IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: ip.String()}},
		}},
		nil, podObjectName(r.cfg.Cluster, "POD", cfg.Name, cfg.Namespace, cfg.PodUID, attempt))
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return "", fmt.Errorf("create pause container: pause image %s is not on the Docker engine: %w", r.cfg.PauseImage, err)
		}
		return "", fmt.Errorf("create pause container: %w", err)
	}
	if err := r.docker.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		r.removeAfterFailure(ctx, created.ID)
		// Docker says so in the error's text only.
		if strings.Contains(err.Error(), "Address already in use") {
			return "", fmt.Errorf("%w: %s: %v", errAddressInUse, ip, err)
		}
		return "", fmt.Errorf("start pause container: %w", err)
	}
	if err := r.connectServices(ctx, created.ID, cfg.Namespace); err != nil {
		r.removeAfterFailure(ctx, created.ID)
		return "", err
	}
	return created.ID, nil
}

// StopPodSandbox kills the sandbox's running containers at once (the
// kubelet has already stopped them gracefully), then its pause container,
// which lets go of the pod's address. Stopping a stopped sandbox does
// nothing.
func (r *Runtime) StopPodSandbox(ctx context.Context, id string) error {
	info, err := r.inspect(ctx, id, labels.RoleSandbox)
	if err != nil {
		return fmt.Errorf("stop pod sandbox %s: %w", id, err)
	}
	containers, err := r.list(ctx, labels.RolePod, labels.Filter(labels.SandboxID, info.ID))
	if err != nil {
		return fmt.Errorf("stop pod sandbox %s: list its containers: %w", id, err)
	}
	for _, c := range containers {
		if isRunning(c.State) {
			if err := r.kill(ctx, c.ID); err != nil {
				return fmt.Errorf("stop pod sandbox %s: %w", id, err)
			}
		}
	}
	if isRunning(info.State) {
		if err := r.kill(ctx, info.ID); err != nil {
			return fmt.Errorf("stop pod sandbox %s: %w", id, err)
		}
		l := info.Config.Labels
		r.logger.Info("Stopped pod sandbox", "pod", l[labels.PodNamespace]+"/"+l[labels.PodName], "sandbox", info.ID)
	}
	return nil
}

// RemovePodSandbox removes the sandbox's containers, with their logs, and
// its pause container. Removing a sandbox that does not exist does nothing,
// as the CRI asks.
func (r *Runtime) RemovePodSandbox(ctx context.Context, id string) error {
	info, err := r.inspect(ctx, id, labels.RoleSandbox)
	if errors.Is(err, cri.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove pod sandbox %s: %w", id, err)
	}
	containers, err := r.list(ctx, labels.RolePod, labels.Filter(labels.SandboxID, info.ID))
	if err != nil {
		return fmt.Errorf("remove pod sandbox %s: list its containers: %w", id, err)
	}
	for _, c := range containers {
		if err := r.remove(ctx, c.ID); err != nil {
			return fmt.Errorf("remove pod sandbox %s: %w", id, err)
		}
	}
	if err := r.remove(ctx, info.ID); err != nil {
		return fmt.Errorf("remove pod sandbox %s: %w", id, err)
	}
	return nil
}

// ListPodSandboxes lists the node's sandboxes, ready or not, oldest first.
func (r *Runtime) ListPodSandboxes(ctx context.Context) ([]cri.SandboxStatus, error) {
	infos, err := r.list(ctx, labels.RoleSandbox)
	if err != nil {
		return nil, fmt.Errorf("list pod sandboxes: %w", err)
	}
	list := make([]cri.SandboxStatus, 0, len(infos))
	for _, info := range infos {
		list = append(list, sandboxStatus(info))
	}
	return list, nil
}

// isRunning reports whether a container has a process that holds its
// resources (and its address).
func isRunning(st *container.State) bool {
	return st.Running || st.Paused || st.Restarting
}

// kill sends SIGKILL and waits until the container is gone from the
// process table. A container that is not running is left as it is.
func (r *Runtime) kill(ctx context.Context, id string) error {
	if err := r.docker.ContainerKill(ctx, id, "KILL"); err != nil {
		// Conflict: it is not running (any more).
		if cerrdefs.IsConflict(err) || cerrdefs.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("kill container %s: %w", id, err)
	}
	return r.waitExit(ctx, id)
}

// waitExit waits until a container is not running.
func (r *Runtime) waitExit(ctx context.Context, id string) error {
	exited, failed := r.docker.ContainerWait(ctx, id, container.WaitConditionNotRunning)
	select {
	case <-exited:
		return nil
	case err := <-failed:
		if cerrdefs.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("wait for container %s to exit: %w", id, err)
	}
}

// remove force-removes a container with its log; one that is already gone
// is no error.
func (r *Runtime) remove(ctx context.Context, id string) error {
	r.inspected.forget(id)
	r.oomKilled.Delete(id)
	err := r.docker.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	// Conflict: another call is removing it already.
	if err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	return nil
}

// removeAfterFailure removes what a failed step created, even if ctx is
// done (that may be why the step failed).
func (r *Runtime) removeAfterFailure(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := r.remove(ctx, id); err != nil {
		r.logger.Warn("Could not remove a container that failed to start", "container", id, "err", err)
	}
}

// logConfig keeps a container's log in Docker's json-file format, rotated
// once at upstream's containerLogMaxSize, whatever the engine's default
// driver is: ContainerLogs reads it back.
func logConfig() container.LogConfig {
	return container.LogConfig{Type: "json-file", Config: map[string]string{"max-size": "10m", "max-file": "2"}}
}
