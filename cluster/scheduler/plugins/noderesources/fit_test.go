package noderesources

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
	st "github.com/klab-dev/klab/cluster/scheduler/plugins/internal/testing"
)

const gpu v1.ResourceName = "example.com/gpu"

// node has 4 cores, 8Gi, 3 pod slots and 2 GPUs.
func node() *v1.Node {
	return st.MakeNode("a").Allocatable(map[v1.ResourceName]string{
		v1.ResourceCPU: "4", v1.ResourceMemory: "8Gi", v1.ResourcePods: "3", gpu: "2",
	}).Obj()
}

func TestFitFilter(t *testing.T) {
	// existing uses 3 cores and 6Gi, leaving 1 core and 2Gi.
	existing := st.MakePod().Name("existing").Node("a").
		Req(map[v1.ResourceName]string{v1.ResourceCPU: "3", v1.ResourceMemory: "6Gi", gpu: "1"}).Obj()
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		want     st.Result
	}{
		{
			name:     "fits in what is left",
			pod:      st.MakePod().Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourceMemory: "2Gi"}).Obj(),
			existing: []*v1.Pod{existing},
		},
		{
			name:     "too much cpu for what is left",
			pod:      st.MakePod().Req(map[v1.ResourceName]string{v1.ResourceCPU: "1500m"}).Obj(),
			existing: []*v1.Pod{existing},
			want:     st.Reject(framework.Unschedulable, "Insufficient cpu"),
		},
		{
			name:     "cpu and memory short: both reasons, cpu first",
			pod:      st.MakePod().Req(map[v1.ResourceName]string{v1.ResourceCPU: "2", v1.ResourceMemory: "3Gi"}).Obj(),
			existing: []*v1.Pod{existing},
			want:     st.Reject(framework.Unschedulable, "Insufficient cpu", "Insufficient memory"),
		},
		{
			name:     "extended resource short",
			pod:      st.MakePod().Req(map[v1.ResourceName]string{gpu: "2"}).Obj(),
			existing: []*v1.Pod{existing},
			want:     st.Reject(framework.Unschedulable, "Insufficient example.com/gpu"),
		},
		{
			name: "request beyond the node's allocatable cannot be helped by eviction",
			pod:  st.MakePod().Req(map[v1.ResourceName]string{v1.ResourceMemory: "9Gi"}).Obj(),
			want: st.Reject(framework.UnschedulableAndUnresolvable, "Insufficient memory"),
		},
		{
			name:     "one resolvable and one unresolvable shortfall: unresolvable",
			pod:      st.MakePod().Req(map[v1.ResourceName]string{v1.ResourceCPU: "2", v1.ResourceMemory: "9Gi"}).Obj(),
			existing: []*v1.Pod{existing},
			want:     st.Reject(framework.UnschedulableAndUnresolvable, "Insufficient cpu", "Insufficient memory"),
		},
		{
			name: "pod slots full, even for a pod requesting nothing",
			pod:  st.MakePod().Req(nil).Obj(),
			existing: []*v1.Pod{
				st.MakePod().Name("p1").Node("a").Obj(), st.MakePod().Name("p2").Node("a").Obj(), st.MakePod().Name("p3").Node("a").Obj(),
			},
			want: st.Reject(framework.Unschedulable, "Too many pods"),
		},
		{
			// Init containers run one at a time before the app: the pod
			// needs max(2, 500m) = 2 cores, more than the 1 left.
			name: "the largest init container counts",
			pod: st.MakePod().InitReq(map[v1.ResourceName]string{v1.ResourceCPU: "2"}).
				Req(map[v1.ResourceName]string{v1.ResourceCPU: "500m"}).Obj(),
			existing: []*v1.Pod{existing},
			want:     st.Reject(framework.Unschedulable, "Insufficient cpu"),
		},
	}
	pl, err := NewFit(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := st.NewNodeInfos([]*v1.Node{node()}, tt.existing)
			_, got, err := st.RunFilter(context.Background(), pl, tt.pod, nodes)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got[0]); diff != "" {
				t.Errorf("Filter (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFitScoreLeastAllocated(t *testing.T) {
	alloc := map[v1.ResourceName]string{v1.ResourceCPU: "4", v1.ResourceMemory: "8Gi", v1.ResourcePods: "110"}
	nodes := []*v1.Node{
		st.MakeNode("busy").Allocatable(alloc).Obj(),
		st.MakeNode("empty").Allocatable(alloc).Obj(),
	}
	busy := st.MakePod().Name("busy").Node("busy").
		Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourceMemory: "2Gi"}).Obj()
	tests := []struct {
		name string
		pod  *v1.Pod
		want []int64
	}{
		{
			// busy: cpu (4000-2000)*100/4000 = 50, memory (8-4)*100/8 = 50,
			// mean 50. empty: (4000-1000)*100/4000 = 75 twice, mean 75.
			name: "the emptier node scores higher",
			pod:  st.MakePod().Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourceMemory: "2Gi"}).Obj(),
			want: []int64{50, 75},
		},
		{
			// A container without requests counts as 100m and 200Mi.
			// busy: cpu (4000-1100)*100/4000 = 72, memory
			// (8192-2248)*100/8192 = 72, mean 72. empty: cpu 3900*100/4000
			// = 97, memory 7992*100/8192 = 97.
			name: "non-zero defaults stand in for missing requests",
			pod:  st.MakePod().Req(nil).Obj(),
			want: []int64{72, 97},
		},
	}
	pl, err := NewFit(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, raw, normalized, err := st.RunScore(context.Background(), pl, tt.pod, st.NewNodeInfos(nodes, []*v1.Pod{busy}))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, raw); diff != "" {
				t.Errorf("scores (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(raw, normalized); diff != "" {
				t.Errorf("Fit has no NormalizeScore, yet scores changed (-raw +normalised):\n%s", diff)
			}
		})
	}
}
