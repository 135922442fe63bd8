package dockercri

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/strslice"

	"github.com/klab-dev/klab/cluster/app"
	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// CreateContainer creates a container in a running sandbox's network
// namespace. As in Kubernetes, Command replaces the image's entrypoint (and
// with it the image's arguments), and Args replace the image's arguments.
func (r *Runtime) CreateContainer(ctx context.Context, sandboxID string, cfg cri.ContainerConfig) (string, error) {
	if cfg.Name == "" || cfg.Image == "" {
		return "", errors.New("create container: name and image are required")
	}
	sb, err := r.inspect(ctx, sandboxID, labels.RoleSandbox)
	if err != nil {
		return "", fmt.Errorf("create container %s: sandbox %s: %w", cfg.Name, sandboxID, err)
	}
	if !isRunning(sb.State) {
		return "", fmt.Errorf("create container %s: sandbox %s is not ready", cfg.Name, sandboxID)
	}
	pod := sb.Config.Labels
	l := podLabels(pod)
	for k, v := range r.ownLabels(labels.RolePod) {
		l[k] = v
	}
	l[labels.SandboxID] = sb.ID
	l[labels.ContainerName] = cfg.Name
	l[labels.Attempt] = strconv.Itoa(cfg.Attempt)
	l[labels.PodLabels] = encodeCRILabels(cfg.Labels)

	config := &container.Config{
		Image:  cfg.Image,
		Env:    r.containerEnv(sb, cfg),
		Labels: l,
	}
	if len(cfg.Command) > 0 {
		config.Entrypoint = strslice.StrSlice(cfg.Command)
	}
	if len(cfg.Args) > 0 {
		config.Cmd = strslice.StrSlice(cfg.Args)
	}
	if cfg.StandIn != "" {
		if err := r.standIn(config, cfg); err != nil {
			return "", fmt.Errorf("create container %s: %w", cfg.Name, err)
		}
	}
	host := &container.HostConfig{
		// The pod's network namespace, and so its IP, is the sandbox's.
		NetworkMode: container.NetworkMode("container:" + sb.ID),
		LogConfig:   logConfig(),
		Resources: container.Resources{
			NanoCPUs: cfg.MilliCPULimit * 1e6,
		},
		// No privileges, and no mounts but the pod's volumes from the
		// kubelet's directory: above all never the engine's socket, which
		// would give a pod the whole machine.
	}
	binds, err := r.bindMounts(ctx, cfg.Mounts)
	if err != nil {
		return "", fmt.Errorf("create container %s: %w", cfg.Name, err)
	}
	host.Mounts = binds
	if cfg.MemoryLimit > 0 {
		// Swap as large as the memory: none, so that a container over
		// its limit is killed instead of swapping.
		host.Resources.Memory = cfg.MemoryLimit
		host.Resources.MemorySwap = cfg.MemoryLimit
	}
	name := podObjectName(r.cfg.Cluster, cfg.Name, pod[labels.PodName], pod[labels.PodNamespace], pod[labels.PodUID], cfg.Attempt)
	created, err := r.docker.ContainerCreate(ctx, config, host, nil, nil, name)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return "", fmt.Errorf("create container %s: %w", cfg.Name, r.errImageAbsent(cfg.Image))
		}
		return "", fmt.Errorf("create container %s: %w", cfg.Name, err)
	}
	return created.ID, nil
}

// containerEnv is the container's environment: the pod's identity, then
// the container's own, which wins. As in the in-process runtime, klab hands
// every container its pod's name, namespace, node and IP (upstream a
// manifest asks for them through the downward API), so that the demo app
// can say who answered.
func (r *Runtime) containerEnv(sb container.InspectResponse, cfg cri.ContainerConfig) []string {
	pod := sb.Config.Labels
	env := []cri.KeyValue{
		{Key: app.EnvHostname, Value: sb.Config.Hostname}, {Key: app.EnvImage, Value: cfg.Image},
		{Key: app.EnvPodName, Value: pod[labels.PodName]}, {Key: app.EnvPodNamespace, Value: pod[labels.PodNamespace]},
		{Key: app.EnvNodeName, Value: r.cfg.Node}, {Key: app.EnvPodIP, Value: pod[labels.IP]},
	}
	env = append(env, cfg.Env...)
	// Docker keeps every entry; keep the last of each name, in the place
	// of the first.
	index := map[string]int{}
	var out []string
	for _, kv := range env {
		if i, ok := index[kv.Key]; ok {
			out[i] = kv.Key + "=" + kv.Value
			continue
		}
		index[kv.Key] = len(out)
		out = append(out, kv.Key+"="+kv.Value)
	}
	return out
}

// StartContainer starts a created container. When the engine cannot start
// it (a command the image does not have), the container is left exited
// with reason StartError and the error says why; no event is sent then,
// since the kubelet learns it from the error.
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	info, err := r.inspect(ctx, id, labels.RolePod)
	if err != nil {
		return fmt.Errorf("start container %s: %w", id, err)
	}
	if info.State.Status != "created" || info.State.Error != "" {
		return fmt.Errorf("start container %s: it is %s, not created", id, containerStatus(info).State)
	}
	sandboxID := info.Config.Labels[labels.SandboxID]
	sb, err := r.inspect(ctx, sandboxID, labels.RoleSandbox)
	if err != nil {
		return fmt.Errorf("start container %s: sandbox %s: %w", id, sandboxID, err)
	}
	if !isRunning(sb.State) {
		return fmt.Errorf("start container %s: sandbox %s is not ready", id, sandboxID)
	}
	if err := r.docker.ContainerStart(ctx, info.ID, container.StartOptions{}); err != nil {
		return fmt.Errorf("start container %s: %w", id, err)
	}
	l := info.Config.Labels
	r.logger.Info("Started container", "container", info.ID, "name", l[labels.ContainerName],
		"pod", l[labels.PodNamespace]+"/"+l[labels.PodName], "image", info.Config.Image)
	return nil
}

// StopContainer sends SIGTERM, and SIGKILL after timeout; with no timeout
// it kills at once, as containerd does. It returns once the container has
// exited. Stopping a container that is not running does nothing.
func (r *Runtime) StopContainer(ctx context.Context, id string, timeout time.Duration) error {
	info, err := r.inspect(ctx, id, labels.RolePod)
	if err != nil {
		return fmt.Errorf("stop container %s: %w", id, err)
	}
	if !isRunning(info.State) {
		return nil
	}
	if timeout <= 0 {
		return r.kill(ctx, info.ID)
	}
	// Docker counts in whole seconds; rounding up never cuts the grace
	// period short.
	seconds := int((timeout + time.Second - 1) / time.Second)
	if err := r.docker.ContainerStop(ctx, info.ID, container.StopOptions{Timeout: &seconds}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("stop container %s: %w", id, err)
	}
	return nil
}

// RemoveContainer deletes the container and its log, killing it first if
// it still runs. Removing a container that does not exist does nothing,
// as the CRI asks.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	info, err := r.inspect(ctx, id, labels.RolePod)
	if errors.Is(err, cri.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	return r.remove(ctx, info.ID)
}

// ContainerStatus reports one container.
func (r *Runtime) ContainerStatus(ctx context.Context, id string) (cri.ContainerStatus, error) {
	info, err := r.inspect(ctx, id, labels.RolePod)
	if err != nil {
		return cri.ContainerStatus{}, fmt.Errorf("container status %s: %w", id, err)
	}
	return r.statusOf(info), nil
}

// ListContainers reports every container of the node's pods not yet
// removed, oldest first.
func (r *Runtime) ListContainers(ctx context.Context) ([]cri.ContainerStatus, error) {
	infos, err := r.list(ctx, labels.RolePod)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	list := make([]cri.ContainerStatus, 0, len(infos))
	for _, info := range infos {
		list = append(list, r.statusOf(info))
	}
	return list, nil
}
