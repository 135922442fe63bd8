package docker

import (
	"context"
	"fmt"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
	"github.com/klab-dev/klab/cluster/runtime/docker/standby"
)

var _ runtime.StandBy = (*Runtime)(nil)

// StandDown stops the component in its running container and keeps the
// container (standby.StandDown): the process stops the component as on
// SIGTERM and waits. It returns once the component's port is closed, the
// component then being stopped past its listeners; one that serves no port
// cannot be followed, and is refused.
func (r *Runtime) StandDown(ctx context.Context, ref runtime.Ref) error {
	c, addr, err := r.standbyTarget(ctx, ref, "stand down")
	if err != nil {
		return err
	}
	if err := r.cli.ContainerKill(ctx, c.ID, standby.StandDownName); err != nil {
		return fmt.Errorf("stand down %s: %w", ref, err)
	}
	tick := time.NewTicker(servePollInterval)
	defer tick.Stop()
	for serving(addr) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("stand down %s: it still serves on %s: %w", ref, addr, ctx.Err())
		case <-tick.C:
		}
	}
	r.setStoodDown(ref, true)
	return nil
}

func (r *Runtime) setStoodDown(ref runtime.Ref, down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stoodDown == nil {
		r.stoodDown = map[runtime.Ref]bool{}
	}
	if down {
		r.stoodDown[ref] = true
	} else {
		delete(r.stoodDown, ref)
	}
}

// isStoodDown reports whether ref's component was stood down by this
// Runtime: its container runs, the component does not.
func (r *Runtime) isStoodDown(ref runtime.Ref) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stoodDown[ref]
}

// StandUp starts again the component that StandDown stopped in its
// container, and returns once it serves. If the container is no longer
// running (it was stopped meanwhile), it starts the container instead.
func (r *Runtime) StandUp(ctx context.Context, ref runtime.Ref) error {
	if c, err := r.componentContainer(ctx, ref); err == nil && c.State != container.StateRunning && c.State != container.StatePaused {
		r.setStoodDown(ref, false)
		return r.Start(ctx, ref)
	}
	c, _, err := r.standbyTarget(ctx, ref, "stand up")
	if err != nil {
		return err
	}
	node, err := r.nodeContainer(ctx, ref.Node)
	if err != nil {
		return fmt.Errorf("stand up %s: %w", ref, err)
	}
	if err := r.cli.ContainerKill(ctx, c.ID, standby.StandUpName); err != nil {
		return fmt.Errorf("stand up %s: %w", ref, err)
	}
	r.setStoodDown(ref, false)
	return r.waitServing(ctx, ref, c.ID, node.ID)
}

// standbyTarget is ref's container, running, and the address its port is
// reached at.
func (r *Runtime) standbyTarget(ctx context.Context, ref runtime.Ref, what string) (container.Summary, string, error) {
	c, err := r.componentContainer(ctx, ref)
	if err != nil {
		return c, "", fmt.Errorf("%s %s: %w", what, ref, err)
	}
	if c.State != container.StateRunning {
		return c, "", fmt.Errorf("%s %s: its container is %s, not running", what, ref, c.State)
	}
	if c.Labels[labels.StandBy] == "" {
		return c, "", fmt.Errorf("%s %s: its container was made by an older klab, whose process does not stand by", what, ref)
	}
	node, err := r.nodeContainer(ctx, ref.Node)
	if err != nil {
		return c, "", fmt.Errorf("%s %s: %w", what, ref, err)
	}
	addr, port, err := r.serveAddr(ctx, c.ID, node.ID)
	if err != nil {
		return c, "", fmt.Errorf("%s %s: %w", what, ref, err)
	}
	if port == 0 || addr == "" {
		return c, "", fmt.Errorf("%s %s: it serves no port this machine reaches, so its stop cannot be followed", what, ref)
	}
	return c, addr, nil
}
