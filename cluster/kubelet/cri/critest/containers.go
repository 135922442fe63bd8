package critest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/kubelet/labels"
)

// CreateContainer creates a container in a ready sandbox.
func (r *Runtime) CreateContainer(ctx context.Context, sandboxID string, cfg cri.ContainerConfig) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.record(OpCreateContainer, sandboxID, cfg.Name); err != nil {
		return "", err
	}
	sb, ok := r.sandboxes[sandboxID]
	if !ok {
		return "", fmt.Errorf("create container %s: sandbox %s: %w", cfg.Name, sandboxID, cri.ErrNotFound)
	}
	if !sb.status.Ready {
		return "", fmt.Errorf("create container %s: sandbox %s is not ready", cfg.Name, sandboxID)
	}
	img, ok := r.images[cfg.Image]
	if cfg.StandIn != "" {
		// klab's stand-in runs from klab's own image, always present.
		img, ok = cri.Image{ID: "sha256:standin-" + cfg.StandIn, Names: []string{cfg.Image}}, true
	}
	if !ok {
		return "", fmt.Errorf("create container %s: image %q: %w", cfg.Name, cfg.Image, cri.ErrImageNotFound)
	}
	var b Behavior
	if r.opts.Behave != nil {
		b = r.opts.Behave(cfg)
	}
	id := r.newID("container-")
	r.containers[id] = &container{
		seq: r.nextID,
		status: cri.ContainerStatus{
			ID: id, SandboxID: sandboxID, Name: cfg.Name, Attempt: cfg.Attempt,
			Image: cfg.Image, ImageID: img.ID, State: cri.StateCreated, CreatedAt: r.opts.Now(),
			Labels: maps.Clone(cfg.Labels),
		},
		behavior: b,
		changed:  make(chan struct{}),
	}
	return id, nil
}

// StartContainer starts a created container.
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.record(OpStartContainer, id); err != nil {
		return err
	}
	c, ok := r.containers[id]
	if !ok {
		return fmt.Errorf("start container %s: %w", id, cri.ErrNotFound)
	}
	if c.status.State != cri.StateCreated {
		return fmt.Errorf("start container %s: container is %s", id, c.status.State)
	}
	now := r.opts.Now()
	c.status.State, c.status.StartedAt = cri.StateRunning, now
	for _, line := range c.behavior.Logs {
		c.logs = append(c.logs, logLine{at: now, text: line})
	}
	r.emit(cri.ContainerStarted, c)
	if d := c.behavior.ExitAfter; d > 0 {
		code := c.behavior.ExitCode
		c.exitTmr = time.AfterFunc(d, func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			if c.status.State == cri.StateRunning {
				r.exitLocked(c, code, "", "")
			}
		})
	}
	return nil
}

// emit sends an event without blocking (under r.mu).
func (r *Runtime) emit(t cri.EventType, c *container) {
	if r.closed {
		return
	}
	select {
	case r.events <- cri.Event{Type: t, ContainerID: c.status.ID, SandboxID: c.status.SandboxID, Labels: maps.Clone(c.status.Labels)}:
	default:
	}
}

// exitLocked ends a running container (under r.mu).
func (r *Runtime) exitLocked(c *container, code int, reason, message string) {
	if c.status.State != cri.StateRunning {
		return
	}
	if reason == "" {
		reason = cri.ReasonCompleted
		if code != 0 {
			reason = cri.ReasonError
		}
	}
	if c.exitTmr != nil {
		c.exitTmr.Stop()
	}
	c.status.State, c.status.FinishedAt = cri.StateExited, r.opts.Now()
	c.status.ExitCode, c.status.Reason, c.status.Message = code, reason, message
	close(c.changed)
	c.changed = make(chan struct{})
	r.emit(cri.ContainerExited, c)
}

// Exit makes a running container exit with code, as if its process
// returned it.
func (r *Runtime) Exit(id string, code int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok || c.status.State != cri.StateRunning {
		return fmt.Errorf("exit container %s: not running", id)
	}
	r.exitLocked(c, code, "", "")
	return nil
}

// OOMKill kills a running container as the kernel does when it exceeds
// its memory limit.
func (r *Runtime) OOMKill(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok || c.status.State != cri.StateRunning {
		return fmt.Errorf("oom-kill container %s: not running", id)
	}
	r.exitLocked(c, 137, cri.ReasonOOMKilled, "")
	return nil
}

// StopContainer stops a container: at once with its TermExitCode, or,
// when it ignores SIGTERM, after timeout with 137.
func (r *Runtime) StopContainer(ctx context.Context, id string, timeout time.Duration) error {
	r.mu.Lock()
	if err := r.record(OpStopContainer, id, timeout.String()); err != nil {
		r.mu.Unlock()
		return err
	}
	c, ok := r.containers[id]
	if !ok {
		r.mu.Unlock()
		return fmt.Errorf("stop container %s: %w", id, cri.ErrNotFound)
	}
	if c.status.State != cri.StateRunning {
		if c.status.State == cri.StateCreated {
			c.status.State = cri.StateExited
			c.status.FinishedAt = r.opts.Now()
		}
		r.mu.Unlock()
		return nil
	}
	if !c.behavior.IgnoreTerm {
		r.exitLocked(c, c.behavior.TermExitCode, "", "")
		r.mu.Unlock()
		return nil
	}
	changed := c.changed
	r.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-changed: // it exited by itself meanwhile
		return nil
	case <-t.C:
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exitLocked(c, 137, cri.ReasonError, "")
	return nil
}

// RemoveContainer deletes an exited container and its log.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.record("RemoveContainer", id)
	c, ok := r.containers[id]
	if !ok {
		return fmt.Errorf("remove container %s: %w", id, cri.ErrNotFound)
	}
	if c.status.State == cri.StateRunning {
		return fmt.Errorf("remove container %s: container is running", id)
	}
	delete(r.containers, id)
	return nil
}

// ContainerStatus reports one container.
func (r *Runtime) ContainerStatus(ctx context.Context, id string) (cri.ContainerStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return cri.ContainerStatus{}, fmt.Errorf("container %s: %w", id, cri.ErrNotFound)
	}
	return copyStatus(c.status), nil
}

func copyStatus(s cri.ContainerStatus) cri.ContainerStatus {
	s.Labels = maps.Clone(s.Labels)
	return s
}

// ListContainers lists every container, oldest first.
func (r *Runtime) ListContainers(ctx context.Context) ([]cri.ContainerStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.fail[OpListContainers]; err != nil {
		return nil, err
	}
	list := slices.Collect(maps.Values(r.containers))
	sort.Slice(list, func(i, j int) bool { return list[i].seq < list[j].seq })
	out := make([]cri.ContainerStatus, 0, len(list))
	for _, c := range list {
		out = append(out, copyStatus(c.status))
	}
	return out, nil
}

// Find returns the newest container called name in the pod with that UID
// (by the kubelet's labels).
func (r *Runtime) Find(podUID, name string) (cri.ContainerStatus, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var best *container
	for _, c := range r.containers {
		if c.status.Name != name || c.status.Labels[labels.PodUID] != podUID {
			continue
		}
		if best == nil || c.status.Attempt > best.status.Attempt ||
			(c.status.Attempt == best.status.Attempt && c.seq > best.seq) {
			best = c
		}
	}
	if best == nil {
		return cri.ContainerStatus{}, false
	}
	return copyStatus(best.status), true
}

// Events delivers container lifecycle events.
func (r *Runtime) Events() <-chan cri.Event { return r.events }

// Close kills every running container and closes the event channel.
func (r *Runtime) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	for _, c := range r.containers {
		r.exitLocked(c, 137, cri.ReasonError, "")
	}
	r.closed = true
	close(r.events)
	return nil
}
