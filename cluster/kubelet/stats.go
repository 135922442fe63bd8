package kubelet

import (
	"net/http"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/kubelet/labels"
	"github.com/klab-dev/klab/cluster/kubelet/statsapi"
)

// The Summary API, /stats/summary: the node's and its running containers'
// CPU and memory, read from the runtime at the time of the request, as
// upstream's CRI stats provider reads them. CPU is cumulative
// (usageCoreNanoSeconds); usageNanoCores is the rate since the previous
// read of the same container, as upstream computes it from its cache of
// the last sample. metrics.k8s.io in the API server scrapes this endpoint.

// cpuSample is a cumulative CPU reading.
type cpuSample struct {
	at  time.Time
	cpu time.Duration
}

// statsCache keeps each container's and the node's previous CPU reading,
// for usageNanoCores.
type statsCache struct {
	mu      sync.Mutex
	started time.Time
	last    map[string]cpuSample // by container ID; "" is the node
}

func newStatsCache() *statsCache {
	return &statsCache{started: time.Now(), last: map[string]cpuSample{}}
}

// cpuStats turns a reading into CPUStats, with the rate since the key's
// previous reading when there is one, and remembers this reading.
func (c *statsCache) cpuStats(key string, u cri.Usage) *statsapi.CPUStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := uint64(max(u.CPU, 0))
	stats := &statsapi.CPUStats{Time: metav1.NewTime(u.Timestamp), UsageCoreNanoSeconds: &total}
	if prev, ok := c.last[key]; ok && u.Timestamp.After(prev.at) && u.CPU >= prev.cpu {
		rate := uint64(float64(u.CPU-prev.cpu) / u.Timestamp.Sub(prev.at).Seconds())
		stats.UsageNanoCores = &rate
	}
	c.last[key] = cpuSample{at: u.Timestamp, cpu: u.CPU}
	return stats
}

// forget drops the readings of containers that are gone.
func (c *statsCache) forget(live map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.last {
		if id != "" && !live[id] {
			delete(c.last, id)
		}
	}
}

func memoryStats(u cri.Usage) *statsapi.MemoryStats {
	ws := uint64(max(u.MemoryWorkingSet, 0))
	return &statsapi.MemoryStats{Time: metav1.NewTime(u.Timestamp), WorkingSetBytes: &ws}
}

// summary reads the node's and its running containers' usage.
func (k *Kubelet) summary(r *http.Request) (statsapi.Summary, error) {
	ctx := r.Context()
	sum := statsapi.Summary{Node: statsapi.NodeStats{NodeName: k.cfg.NodeName, StartTime: metav1.NewTime(k.stats.started)}, Pods: []statsapi.PodStats{}}
	node, err := k.runtime.NodeStats(ctx)
	if err != nil {
		return statsapi.Summary{}, err
	}
	sum.Node.CPU = k.stats.cpuStats("", node)
	sum.Node.Memory = memoryStats(node)

	containers, err := k.runtime.ListContainers(ctx)
	if err != nil {
		return statsapi.Summary{}, err
	}
	pods := map[string]*statsapi.PodStats{}
	live := map[string]bool{}
	for _, c := range containers {
		if c.State != cri.StateRunning || c.Labels[labels.ContainerType] == labels.TypeInit {
			continue
		}
		stats, err := k.runtime.ContainerStats(ctx, c.ID)
		if err != nil {
			continue // exited since the list
		}
		live[c.ID] = true
		uid := c.Labels[labels.PodUID]
		pod, ok := pods[uid]
		if !ok {
			pod = &statsapi.PodStats{PodRef: statsapi.PodReference{
				Name: c.Labels[labels.PodName], Namespace: c.Labels[labels.PodNamespace], UID: uid,
			}, StartTime: metav1.NewTime(c.StartedAt)}
			pods[uid] = pod
		}
		if c.StartedAt.Before(pod.StartTime.Time) {
			pod.StartTime = metav1.NewTime(c.StartedAt)
		}
		pod.Containers = append(pod.Containers, statsapi.ContainerStats{
			Name: c.Name, StartTime: metav1.NewTime(c.StartedAt),
			CPU: k.stats.cpuStats(c.ID, stats.Usage), Memory: memoryStats(stats.Usage),
		})
	}
	k.stats.forget(live)
	for _, pod := range pods {
		sort.Slice(pod.Containers, func(i, j int) bool { return pod.Containers[i].Name < pod.Containers[j].Name })
		pod.CPU, pod.Memory = podTotals(pod.Containers)
		sum.Pods = append(sum.Pods, *pod)
	}
	sort.Slice(sum.Pods, func(i, j int) bool {
		a, b := sum.Pods[i].PodRef, sum.Pods[j].PodRef
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return sum, nil
}

// podTotals adds up a pod's containers.
func podTotals(containers []statsapi.ContainerStats) (*statsapi.CPUStats, *statsapi.MemoryStats) {
	var cpu, ws uint64
	var rate *uint64
	var at metav1.Time
	for i, c := range containers {
		cpu += *c.CPU.UsageCoreNanoSeconds
		ws += *c.Memory.WorkingSetBytes
		if c.CPU.Time.After(at.Time) {
			at = c.CPU.Time
		}
		if c.CPU.UsageNanoCores != nil && (i == 0 || rate != nil) {
			sum := *c.CPU.UsageNanoCores
			if rate != nil {
				sum += *rate
			}
			rate = &sum
		} else {
			rate = nil
		}
	}
	return &statsapi.CPUStats{Time: at, UsageCoreNanoSeconds: &cpu, UsageNanoCores: rate},
		&statsapi.MemoryStats{Time: at, WorkingSetBytes: &ws}
}

func (k *Kubelet) serveSummary(w http.ResponseWriter, r *http.Request) {
	sum, err := k.summary(r)
	if err != nil {
		http.Error(w, "Internal Error: failed to get node stats: "+err.Error(), http.StatusInternalServerError)
		return
	}
	componentbase.WriteJSON(w, http.StatusOK, sum)
}
