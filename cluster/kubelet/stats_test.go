package kubelet

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/kubelet/cri/critest"
	"github.com/klab-dev/klab/cluster/kubelet/labels"
)

// TestSummaryRates: /stats/summary reports each running container's
// cumulative CPU and working set under its pod, and from the second read
// on the CPU rate since the previous read, as upstream's CRI stats
// provider does.
func TestSummaryRates(t *testing.T) {
	f := newFixture(t, critest.Options{})
	ctx := context.Background()
	sb, err := f.rt.RunPodSandbox(ctx, cri.SandboxConfig{PodUID: "uid-1", Name: "web", Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	id, err := f.rt.CreateContainer(ctx, sb.ID, cri.ContainerConfig{Name: "app", Image: appImage, Labels: map[string]string{
		labels.PodUID: "uid-1", labels.PodName: "web", labels.PodNamespace: "default", labels.ContainerName: "app",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	t0 := fixtureStart
	f.rt.SetUsage(id, cri.Usage{Timestamp: t0, CPU: time.Second, MemoryWorkingSet: 64 << 20})
	req := httptest.NewRequest("GET", "/stats/summary", nil)
	first, err := f.k.summary(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Pods) != 1 || len(first.Pods[0].Containers) != 1 {
		t.Fatalf("summary pods = %+v, want web with one container", first.Pods)
	}
	c := first.Pods[0].Containers[0]
	if first.Pods[0].PodRef.Name != "web" || c.Name != "app" || *c.CPU.UsageCoreNanoSeconds != uint64(time.Second) || *c.Memory.WorkingSetBytes != 64<<20 {
		t.Errorf("first read: pod %+v container %s cpu %d ws %d", first.Pods[0].PodRef, c.Name, *c.CPU.UsageCoreNanoSeconds, *c.Memory.WorkingSetBytes)
	}
	if c.CPU.UsageNanoCores != nil {
		t.Errorf("first read has a rate %d; want none without a previous read", *c.CPU.UsageNanoCores)
	}
	// Half a core for two seconds.
	f.rt.SetUsage(id, cri.Usage{Timestamp: t0.Add(2 * time.Second), CPU: 2 * time.Second, MemoryWorkingSet: 64 << 20})
	second, err := f.k.summary(req)
	if err != nil {
		t.Fatal(err)
	}
	c = second.Pods[0].Containers[0]
	if c.CPU.UsageNanoCores == nil || *c.CPU.UsageNanoCores != 500_000_000 {
		t.Fatalf("second read rate = %v, want 500000000 nanocores", c.CPU.UsageNanoCores)
	}
	if p := second.Pods[0].CPU; p.UsageNanoCores == nil || *p.UsageNanoCores != 500_000_000 {
		t.Errorf("pod rate = %v, want the container's", p.UsageNanoCores)
	}
}
