package critest

import (
	"context"
	"fmt"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// running returns a running container, or why it is not.
func (r *Runtime) running(id string) (*container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return nil, fmt.Errorf("container %s: %w", id, cri.ErrNotFound)
	}
	if c.status.State != cri.StateRunning {
		return nil, fmt.Errorf("container %s is not running", id)
	}
	return c, nil
}

// ExecInContainer runs cmd through Options.Exec in a running container.
func (r *Runtime) ExecInContainer(ctx context.Context, id string, cmd []string, streams cri.Streams) (int, error) {
	if _, err := r.running(id); err != nil {
		return 0, err
	}
	if r.opts.Exec == nil || len(cmd) == 0 {
		return 0, fmt.Errorf("exec: %q: executable file not found in $PATH", cmd)
	}
	return r.opts.Exec(cmd, streams), nil
}

// AttachContainer waits for the container to exit, as an attached client
// of a process that writes nothing does.
func (r *Runtime) AttachContainer(ctx context.Context, id string, streams cri.Streams) error {
	for {
		r.mu.Lock()
		c, ok := r.containers[id]
		if !ok || c.status.State != cri.StateRunning {
			r.mu.Unlock()
			return nil
		}
		changed := c.changed
		r.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
