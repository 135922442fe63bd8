package dockercri

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/kubelet/procstats"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// ContainerStats reads a container's cgroup through the engine's one-shot
// stats: cumulative CPU time (cpuacct) and the memory working set as
// cAdvisor computes it, usage less the inactive file cache the kernel can
// reclaim.
func (r *Runtime) ContainerStats(ctx context.Context, id string) (cri.ContainerStats, error) {
	info, err := r.inspect(ctx, id, labels.RolePod)
	if err != nil {
		return cri.ContainerStats{}, fmt.Errorf("container stats %s: %w", id, err)
	}
	u, err := r.cgroupUsage(ctx, info.ID)
	if err != nil {
		return cri.ContainerStats{}, fmt.Errorf("container stats %s: %w", id, err)
	}
	return cri.ContainerStats{ID: id, Usage: u}, nil
}

func (r *Runtime) cgroupUsage(ctx context.Context, id string) (cri.Usage, error) {
	resp, err := r.docker.ContainerStatsOneShot(ctx, id)
	if err != nil {
		return cri.Usage{}, err
	}
	defer resp.Body.Close()
	var stats container.StatsResponse
	if err := json.NewDecoder(resp.Body).Decode(&stats); err != nil {
		return cri.Usage{}, fmt.Errorf("decode the engine's stats: %w", err)
	}
	return cri.Usage{
		Timestamp:        stats.Read,
		CPU:              time.Duration(stats.CPUStats.CPUUsage.TotalUsage),
		MemoryWorkingSet: workingSet(stats.MemoryStats),
	}, nil
}

// workingSet is usage minus inactive_file (cgroup v2) or
// total_inactive_file (v1), never below zero, as cAdvisor's.
func workingSet(m container.MemoryStats) int64 {
	inactive, ok := m.Stats["inactive_file"]
	if !ok {
		inactive = m.Stats["total_inactive_file"]
	}
	if inactive >= m.Usage {
		return 0
	}
	return int64(m.Usage - inactive)
}

// NodeStats adds up the node's running pod containers (from their cgroups)
// and the kubelet's own process (from /proc): the node's components other
// than the kubelet run in containers of their own and are not counted.
func (r *Runtime) NodeStats(ctx context.Context) (cri.Usage, error) {
	infos, err := r.list(ctx, labels.RolePod)
	if err != nil {
		return cri.Usage{}, fmt.Errorf("node stats: %w", err)
	}
	total := cri.Usage{Timestamp: time.Now()}
	if self, err := procstats.Self(); err == nil {
		total.CPU, total.MemoryWorkingSet = self.CPU, self.MemoryBytes
	}
	for _, info := range infos {
		if info.State == nil || !info.State.Running {
			continue
		}
		u, err := r.cgroupUsage(ctx, info.ID)
		if err != nil {
			continue // exited between the list and the read
		}
		total.CPU += u.CPU
		total.MemoryWorkingSet += u.MemoryWorkingSet
	}
	return total, nil
}
