package inprocess

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/kubelet/procstats"
)

// containerCPU is one container's CPU account: the twin of its cgroup's
// cpuacct.usage. A container here is goroutines of the klab process, which
// the kernel does not count apart, so what it holds is the CPU time the
// app measured on its own thread for the work it did on purpose
// (--cpu-per-request); the app's other work (accepting connections,
// writing answers) is counted with the klab process as the node's.
type containerCPU struct{ ns atomic.Int64 }

// AddCPU records d more CPU time.
func (c *containerCPU) AddCPU(d time.Duration) { c.ns.Add(int64(d)) }

// ContainerStats reports the CPU time and memory the container's app
// accounted: the memory it allocated on purpose is its working set.
func (r *Runtime) ContainerStats(ctx context.Context, id string) (cri.ContainerStats, error) {
	c, err := r.lookup(id)
	if err != nil {
		return cri.ContainerStats{}, fmt.Errorf("container stats %s: %w", id, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	stats := cri.ContainerStats{ID: id, Usage: cri.Usage{Timestamp: time.Now()}}
	if c.cpu != nil {
		stats.CPU = time.Duration(c.cpu.ns.Load())
	}
	if c.memory != nil {
		c.memory.mu.Lock()
		stats.MemoryWorkingSet = c.memory.used
		c.memory.mu.Unlock()
	}
	return stats, nil
}

// NodeStats reports the klab process, read from /proc: every node of a
// local cluster is that one process, so each reports the same usage, as
// several kind nodes on one machine would each see the machine's.
func (r *Runtime) NodeStats(ctx context.Context) (cri.Usage, error) {
	u, err := procstats.Self()
	if err != nil {
		return cri.Usage{}, fmt.Errorf("node stats: %w", err)
	}
	return cri.Usage{Timestamp: time.Now(), CPU: u.CPU, MemoryWorkingSet: u.MemoryBytes}, nil
}
