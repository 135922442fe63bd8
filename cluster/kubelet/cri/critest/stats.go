package critest

import (
	"context"
	"fmt"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// SetUsage sets what ContainerStats reports for a container from now on,
// as a test's stand-in for the work the container did.
func (r *Runtime) SetUsage(id string, u cri.Usage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.containers[id]; ok {
		c.usage = u
	}
}

// ContainerStats reports the usage SetUsage last set (zero until then),
// stamped now when SetUsage gave no time.
func (r *Runtime) ContainerStats(ctx context.Context, id string) (cri.ContainerStats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return cri.ContainerStats{}, fmt.Errorf("container stats %s: %w", id, cri.ErrNotFound)
	}
	u := c.usage
	if u.Timestamp.IsZero() {
		u.Timestamp = r.opts.Now()
	}
	return cri.ContainerStats{ID: id, Usage: u}, nil
}

// NodeStats reports the sum of the running containers' usage.
func (r *Runtime) NodeStats(ctx context.Context) (cri.Usage, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	total := cri.Usage{Timestamp: r.opts.Now()}
	for _, c := range r.containers {
		if c.status.State == cri.StateRunning {
			total.CPU += c.usage.CPU
			total.MemoryWorkingSet += c.usage.MemoryWorkingSet
		}
	}
	return total, nil
}
