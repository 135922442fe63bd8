package inprocess

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/klab-dev/klab/cluster/app"
	"github.com/klab-dev/klab/cluster/app/standin"
	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// container is one container: created, then running app.Run in a goroutine,
// then exited, until it is removed. Its fields above mu never change.
type container struct {
	id        string
	sandboxID string
	cfg       cri.ContainerConfig
	image     imageRef
	// nameKey is the name the container reserves in its sandbox.
	nameKey   string
	createdAt time.Time
	log       *logFile
	// done is closed when the container has exited.
	done chan struct{}

	mu         sync.Mutex
	state      cri.State
	startedAt  time.Time
	finishedAt time.Time
	exitCode   int
	reason     string
	message    string
	// terminate is SIGTERM; kill, closed once, is SIGKILL.
	terminate context.CancelFunc
	kill      chan struct{}
	killOnce  sync.Once
	memory    *containerMemory
	cpu       *containerCPU
	// execs are the commands kubectl exec runs in the container.
	execs processTable
}

func (c *container) status() cri.ContainerStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return cri.ContainerStatus{
		ID:         c.id,
		SandboxID:  c.sandboxID,
		Name:       c.cfg.Name,
		Attempt:    c.cfg.Attempt,
		Image:      c.cfg.Image,
		ImageID:    imageID(c.image.repo),
		State:      c.state,
		CreatedAt:  c.createdAt,
		StartedAt:  c.startedAt,
		FinishedAt: c.finishedAt,
		ExitCode:   c.exitCode,
		Reason:     c.reason,
		Message:    c.message,
		Labels:     maps.Clone(c.cfg.Labels),
	}
}

// signalKill kills a running container, as SIGKILL would.
func (c *container) signalKill() {
	c.mu.Lock()
	kill := c.kill
	c.mu.Unlock()
	if kill != nil {
		c.killOnce.Do(func() { close(kill) })
	}
}

// stop sends SIGTERM, waits up to timeout for the container to exit, then
// kills it; with no timeout it kills at once, as containerd does. It
// returns once the container has exited.
func (c *container) stop(ctx context.Context, timeout time.Duration) error {
	c.mu.Lock()
	state, terminate := c.state, c.terminate
	c.mu.Unlock()
	if state != cri.StateRunning {
		return nil
	}
	if timeout > 0 {
		terminate()
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-c.done:
			return nil
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("stop container %s: %w", c.id, ctx.Err())
		}
	}
	c.signalKill()
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop container %s: %w", c.id, ctx.Err())
	}
}

// CreateContainer creates a container in a ready sandbox, with an empty log.
func (r *Runtime) CreateContainer(ctx context.Context, sandboxID string, cfg cri.ContainerConfig) (string, error) {
	image, ok := parseImage(cfg.Image)
	if cfg.StandIn != "" {
		// klab's stand-in for a tutorial image is the app's image.
		if _, known := standin.Lookup(cfg.StandIn); !known {
			return "", fmt.Errorf("create container %s: klab has no stand-in for %q", cfg.Name, cfg.StandIn)
		}
		image, ok = imageRef{repo: AppRepository, tag: "latest"}, true
	}
	if !ok {
		return "", fmt.Errorf("create container %s: %w", cfg.Name, errImageAbsent(cfg.Image))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return "", errClosed
	}
	sb, ok := r.sandboxes[sandboxID]
	if !ok {
		return "", fmt.Errorf("create container %s: sandbox %s: %w", cfg.Name, sandboxID, cri.ErrNotFound)
	}
	if !sb.ready {
		return "", fmt.Errorf("create container %s: sandbox %s is not ready", cfg.Name, sandboxID)
	}
	if err := mountInRoot(sb.rootDir, cfg.Mounts); err != nil {
		return "", fmt.Errorf("create container %s: %w", cfg.Name, err)
	}
	id := newID()
	nameKey := sandboxID + "/" + cfg.Name + "/" + strconv.Itoa(cfg.Attempt)
	if owner, taken := r.names[nameKey]; taken {
		return "", fmt.Errorf("create container %s: failed to reserve container name %q attempt %d: it is reserved for %s",
			cfg.Name, cfg.Name, cfg.Attempt, owner)
	}
	// Upstream's <pod log dir>/<container>/<attempt>.log.
	log, err := openLogFile(filepath.Join(sb.logDir, cfg.Name, strconv.Itoa(cfg.Attempt)+".log"), r.cfg.LogMaxSize)
	if err != nil {
		return "", fmt.Errorf("create container %s: %w", cfg.Name, err)
	}
	cfg.Command = slices.Clone(cfg.Command)
	cfg.Args = slices.Clone(cfg.Args)
	cfg.Env = slices.Clone(cfg.Env)
	cfg.Labels = maps.Clone(cfg.Labels)
	r.imageLocked(image)
	r.names[nameKey] = id
	r.containers[id] = &container{
		id: id, sandboxID: sandboxID, cfg: cfg, image: image, nameKey: nameKey,
		createdAt: time.Now(), log: log, done: make(chan struct{}), state: cri.StateCreated,
	}
	return id, nil
}

// StartContainer starts a created container. When its command is not one
// the image can run, the container is left exited with reason StartError
// and the error says why; no event is sent then, since the kubelet learns
// it from the error.
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return errClosed
	}
	c, ok := r.containers[id]
	if !ok {
		r.mu.Unlock()
		return fmt.Errorf("start container %s: %w", id, cri.ErrNotFound)
	}
	sb := r.sandboxes[c.sandboxID]
	c.mu.Lock()
	if c.state != cri.StateCreated {
		state := c.state
		c.mu.Unlock()
		r.mu.Unlock()
		return fmt.Errorf("start container %s: it is %s, not created", id, state)
	}
	if !sb.ready {
		c.mu.Unlock()
		r.mu.Unlock()
		return fmt.Errorf("start container %s: sandbox %s is not ready", id, sb.id)
	}
	proc, err := c.process()
	if err != nil {
		c.state = cri.StateExited
		c.finishedAt = time.Now()
		c.exitCode, c.reason, c.message = ExitCodeStartError, ReasonStartError, err.Error()
		close(c.done)
		c.mu.Unlock()
		r.mu.Unlock()
		c.log.finish()
		r.logger.Info("Container failed to start", "container", id, "name", c.cfg.Name, "err", err)
		return fmt.Errorf("start container %s: %w", id, err)
	}
	runCtx, terminate := context.WithCancel(context.Background())
	c.terminate = terminate
	c.kill = make(chan struct{})
	c.memory = &containerMemory{node: r.memory, limit: c.cfg.MemoryLimit}
	c.cpu = &containerCPU{}
	c.state = cri.StateRunning
	c.startedAt = time.Now()
	r.running.Add(1)
	opts := app.Options{
		Args:       proc.appArgs,
		Env:        containerEnv(r.cfg.NodeName, sb, c.cfg),
		Stdout:     c.log.stream("stdout"),
		Stderr:     c.log.stream("stderr"),
		ListenHost: sb.ip,
		Memory:     c.memory,
		CPU:        c.cpu,
		Kill:       c.kill,
	}
	main := func(ctx context.Context) int { return app.Run(ctx, opts) }
	if proc.shellArgv != nil {
		main = r.shellMain(c, sb, opts, proc.shellArgv)
	}
	c.mu.Unlock()
	r.mu.Unlock()

	// Started is sent before the container can exit, so the two arrive in
	// order.
	r.emit(cri.ContainerStarted, c)
	r.logger.Info("Started container", "container", id, "name", c.cfg.Name, "image", c.cfg.Image, "standIn", c.cfg.StandIn, "ip", sb.ip)
	go r.run(runCtx, c, main)
	return nil
}

// run runs the container's process and records how it exited.
func (r *Runtime) run(ctx context.Context, c *container, main func(context.Context) int) {
	defer r.running.Done()
	code := main(ctx)
	c.memory.release()

	c.mu.Lock()
	c.state = cri.StateExited
	c.finishedAt = time.Now()
	c.exitCode = code
	switch {
	case c.memory.oomKilled.Load():
		c.exitCode, c.reason = app.ExitKilled, cri.ReasonOOMKilled
	case code == 0:
		c.reason = cri.ReasonCompleted
	default:
		c.reason = cri.ReasonError
	}
	c.terminate()
	reason := c.reason
	c.mu.Unlock()

	c.log.finish()
	close(c.done)
	r.logger.Info("Container exited", "container", c.id, "name", c.cfg.Name, "exitCode", code, "reason", reason)
	r.emit(cri.ContainerExited, c)
}

// containerEnv is the app's environment: what a container runtime adds
// (HOSTNAME, and the image the app reports), the pod's identity, then the
// container's own, which wins. Upstream a manifest passes a pod its name,
// namespace, node and IP through the downward API; klab's runtimes hand
// them to every container so that the demo app can say who answered
// without that boilerplate in every lesson's manifest.
func containerEnv(nodeName string, sb *sandbox, cfg cri.ContainerConfig) []string {
	hostname := sb.cfg.Hostname
	if hostname == "" {
		hostname = sb.cfg.Name
	}
	env := []string{
		app.EnvHostname + "=" + hostname, app.EnvImage + "=" + cfg.Image,
		app.EnvPodName + "=" + sb.cfg.Name, app.EnvPodNamespace + "=" + sb.cfg.Namespace,
		app.EnvNodeName + "=" + nodeName, app.EnvPodIP + "=" + sb.ip,
	}
	for _, kv := range cfg.Env {
		env = append(env, kv.Key+"="+kv.Value)
	}
	return env
}

// StopContainer sends SIGTERM, and kills the container after timeout.
// Stopping a container that is not running does nothing.
func (r *Runtime) StopContainer(ctx context.Context, id string, timeout time.Duration) error {
	c, err := r.lookup(id)
	if err != nil {
		return fmt.Errorf("stop container %s: %w", id, err)
	}
	return c.stop(ctx, timeout)
}

// RemoveContainer kills the container if it still runs, and deletes it and
// its log. Removing a container that does not exist does nothing, as the
// CRI asks.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	c, err := r.lookup(id)
	if err != nil {
		if r.isClosed() {
			return err
		}
		return nil
	}
	if err := c.stop(ctx, 0); err != nil {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	r.mu.Lock()
	r.forgetLocked(c)
	r.mu.Unlock()
	if err := c.log.remove(); err != nil {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	return nil
}

// ContainerStatus reports one container.
func (r *Runtime) ContainerStatus(ctx context.Context, id string) (cri.ContainerStatus, error) {
	c, err := r.lookup(id)
	if err != nil {
		return cri.ContainerStatus{}, fmt.Errorf("container status %s: %w", id, err)
	}
	return c.status(), nil
}

// ListContainers reports every container not yet removed, oldest first.
func (r *Runtime) ListContainers(ctx context.Context) ([]cri.ContainerStatus, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, errClosed
	}
	containers := make([]*container, 0, len(r.containers))
	for _, c := range r.containers {
		containers = append(containers, c)
	}
	r.mu.Unlock()
	list := make([]cri.ContainerStatus, 0, len(containers))
	for _, c := range containers {
		list = append(list, c.status())
	}
	sort.Slice(list, func(i, j int) bool {
		if !list[i].CreatedAt.Equal(list[j].CreatedAt) {
			return list[i].CreatedAt.Before(list[j].CreatedAt)
		}
		return list[i].ID < list[j].ID
	})
	return list, nil
}

// ContainerLogs writes the container's log to w as opts asks.
func (r *Runtime) ContainerLogs(ctx context.Context, id string, opts cri.LogOptions, w io.Writer) error {
	c, err := r.lookup(id)
	if err != nil {
		return fmt.Errorf("container logs %s: %w", id, err)
	}
	return c.log.read(ctx, opts, w)
}

// lookup finds a container that is not removed.
func (r *Runtime) lookup(id string) (*container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errClosed
	}
	c, ok := r.containers[id]
	if !ok {
		return nil, cri.ErrNotFound
	}
	return c, nil
}

func (r *Runtime) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// forgetLocked drops a container from the runtime's tables.
func (r *Runtime) forgetLocked(c *container) {
	delete(r.containers, c.id)
	if r.names[c.nameKey] == c.id {
		delete(r.names, c.nameKey)
	}
}
