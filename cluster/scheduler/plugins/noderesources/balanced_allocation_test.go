package noderesources

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
	st "github.com/klab-dev/klab/cluster/scheduler/plugins/internal/testing"
)

func TestBalancedAllocation(t *testing.T) {
	alloc := map[v1.ResourceName]string{v1.ResourceCPU: "4", v1.ResourceMemory: "8Gi", v1.ResourcePods: "110"}
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing *v1.Pod
		alloc    map[v1.ResourceName]string
		wantSkip bool
		want     int64
	}{
		{
			name:     "best-effort pod skips the plugin",
			pod:      st.MakePod().Req(nil).Obj(),
			wantSkip: true,
		},
		{
			// Without the pod: fractions 0, 0 -> std 0 -> 100. With it:
			// 0.25, 0.25 -> 100. 50 + (50 + 100 - 100)/2 = 75.
			name: "balance unchanged scores 75",
			pod:  st.MakePod().Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourceMemory: "2Gi"}).Obj(),
			want: 75,
		},
		{
			// Without: cpu 0.5, memory 0.125 -> std 0.1875 -> 81. With
			// 3Gi more memory: 0.5, 0.5 -> 100. 50 + (50+100-81)/2 = 84.
			name:     "pod that evens the node out scores above 75",
			pod:      st.MakePod().Req(map[v1.ResourceName]string{v1.ResourceMemory: "3Gi"}).Obj(),
			existing: st.MakePod().Name("old").Node("a").Req(map[v1.ResourceName]string{v1.ResourceCPU: "2", v1.ResourceMemory: "1Gi"}).Obj(),
			want:     84,
		},
		{
			// Without: 0.25, 0.25 -> 100. With 2 more cores: 0.75, 0.25
			// -> std 0.25 -> 75. 50 + (50+75-100)/2 = 62.
			name:     "pod that unbalances the node scores below 75",
			pod:      st.MakePod().Req(map[v1.ResourceName]string{v1.ResourceCPU: "2"}).Obj(),
			existing: st.MakePod().Name("old").Node("a").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourceMemory: "2Gi"}).Obj(),
			want:     62,
		},
		{
			// Actual requests, not the non-zero defaults: the existing pod
			// that requests nothing leaves the node at 0, 0.
			name:     "pods without requests do not count",
			pod:      st.MakePod().Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourceMemory: "2Gi"}).Obj(),
			existing: st.MakePod().Name("old").Node("a").Req(nil).Obj(),
			want:     75,
		},
		{
			// Only cpu is known: one fraction, std 0, 100 with and
			// without the pod.
			name:  "a resource the node lacks is left out",
			pod:   st.MakePod().Req(map[v1.ResourceName]string{v1.ResourceCPU: "3", v1.ResourceMemory: "1Gi"}).Obj(),
			alloc: map[v1.ResourceName]string{v1.ResourceCPU: "4", v1.ResourcePods: "110"},
			want:  75,
		},
	}
	pl, err := NewBalancedAllocation(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := alloc
			if tt.alloc != nil {
				a = tt.alloc
			}
			var pods []*v1.Pod
			if tt.existing != nil {
				pods = append(pods, tt.existing)
			}
			nodes := st.NewNodeInfos([]*v1.Node{st.MakeNode("a").Allocatable(a).Obj()}, pods)
			pre, raw, normalized, err := st.RunScore(context.Background(), pl, tt.pod, nodes)
			if err != nil {
				t.Fatal(err)
			}
			if got := pre.Code == framework.Skip; got != tt.wantSkip {
				t.Fatalf("PreScore skipped = %v, want %v", got, tt.wantSkip)
			}
			if tt.wantSkip {
				return
			}
			if diff := cmp.Diff([]int64{tt.want}, raw); diff != "" {
				t.Errorf("score (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(raw, normalized); diff != "" {
				t.Errorf("no NormalizeScore, yet scores changed (-raw +normalised):\n%s", diff)
			}
		})
	}
}

func TestBalancedResourceScore(t *testing.T) {
	tests := []struct {
		name                   string
		requested, allocatable []int64
		want                   int64
	}{
		{name: "two even fractions", requested: []int64{1, 2}, allocatable: []int64{4, 8}, want: 100},
		// |1 - 0| / 2 = 0.5 -> 50, the floor for two resources.
		{name: "one full, one empty", requested: []int64{4, 0}, allocatable: []int64{4, 8}, want: 50},
		// Over-commit is capped at 1: fractions 1, 0.5 -> std 0.25 -> 75.
		{name: "fractions are capped at 1", requested: []int64{8, 4}, allocatable: []int64{4, 8}, want: 75},
		// Three fractions 0, 0.5, 1: mean 0.5, std sqrt(0.5/3) = 0.408 -> 59.
		{name: "three resources use the full formula", requested: []int64{0, 1, 2}, allocatable: []int64{2, 2, 2}, want: 59},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := balancedResourceScore(tt.requested, tt.allocatable); got != tt.want {
				t.Errorf("balancedResourceScore = %d, want %d", got, tt.want)
			}
		})
	}
}
