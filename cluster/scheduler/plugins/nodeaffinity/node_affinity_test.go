package nodeaffinity

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
	st "github.com/klab-dev/klab/cluster/scheduler/plugins/internal/testing"
)

func TestFilter(t *testing.T) {
	ok := st.Result{Code: framework.Success}
	mismatch := st.Reject(framework.UnschedulableAndUnresolvable, "node(s) didn't match Pod's node affinity/selector")
	node := st.MakeNode("a").Label("disk", "ssd").Label("zone", "z1").Obj()
	tests := []struct {
		name string
		pod  *v1.Pod
		// wantPre is PreFilter's result; the zero Result is Success.
		wantPre st.Result
		want    st.Result
	}{
		{
			name:    "pod without selector or affinity skips the plugin",
			pod:     st.MakePod().Obj(),
			wantPre: st.Result{Code: framework.Skip},
			want:    ok,
		},
		{
			name: "nodeSelector matches",
			pod:  st.MakePod().NodeSelector(map[string]string{"disk": "ssd"}).Obj(),
			want: ok,
		},
		{
			name: "nodeSelector does not match",
			pod:  st.MakePod().NodeSelector(map[string]string{"disk": "hdd"}).Obj(),
			want: mismatch,
		},
		{
			name: "required In matches",
			pod:  st.MakePod().RequiredNodeAffinity("zone", v1.NodeSelectorOpIn, "z1", "z2").Obj(),
			want: ok,
		},
		{
			name: "required NotIn rejects",
			pod:  st.MakePod().RequiredNodeAffinity("zone", v1.NodeSelectorOpNotIn, "z1").Obj(),
			want: mismatch,
		},
		{
			name: "terms are ORed",
			pod: st.MakePod().RequiredNodeAffinity("zone", v1.NodeSelectorOpIn, "z9").
				RequiredNodeAffinity("disk", v1.NodeSelectorOpExists).Obj(),
			want: ok,
		},
		{
			name: "nodeSelector and affinity must both match",
			pod: st.MakePod().NodeSelector(map[string]string{"disk": "hdd"}).
				RequiredNodeAffinity("zone", v1.NodeSelectorOpIn, "z1").Obj(),
			want: mismatch,
		},
	}
	pl, err := New(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pre, got, err := st.RunFilter(context.Background(), pl, tt.pod, st.NewNodeInfos([]*v1.Node{node}, nil))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantPre, pre); diff != "" {
				t.Errorf("PreFilter (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got[0]); diff != "" {
				t.Errorf("Filter (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScore(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode("both").Label("disk", "ssd").Label("zone", "z1").Obj(),
		st.MakeNode("disk").Label("disk", "ssd").Obj(),
		st.MakeNode("none").Obj(),
	}
	tests := []struct {
		name           string
		pod            *v1.Pod
		wantSkip       bool
		wantRaw        []int64
		wantNormalized []int64
	}{
		{
			name:     "no preferred terms skips scoring",
			pod:      st.MakePod().RequiredNodeAffinity("zone", v1.NodeSelectorOpExists).Obj(),
			wantSkip: true,
		},
		{
			// Raw: weights of matched terms (2+5, 2, 0); normalised
			// 100*raw/7: 100, 28, 0.
			name: "weights of matched terms add up, then scale to the best node",
			pod: st.MakePod().PreferredNodeAffinity(2, "disk", v1.NodeSelectorOpIn, "ssd").
				PreferredNodeAffinity(5, "zone", v1.NodeSelectorOpIn, "z1").Obj(),
			wantRaw:        []int64{7, 2, 0},
			wantNormalized: []int64{100, 28, 0},
		},
		{
			name:           "no node matches: all zero",
			pod:            st.MakePod().PreferredNodeAffinity(3, "gpu", v1.NodeSelectorOpExists).Obj(),
			wantRaw:        []int64{0, 0, 0},
			wantNormalized: []int64{0, 0, 0},
		},
	}
	pl, err := New(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pre, raw, normalized, err := st.RunScore(context.Background(), pl, tt.pod, st.NewNodeInfos(nodes, nil))
			if err != nil {
				t.Fatal(err)
			}
			if got := pre.Code == framework.Skip; got != tt.wantSkip {
				t.Fatalf("PreScore skipped = %v, want %v", got, tt.wantSkip)
			}
			if diff := cmp.Diff(tt.wantRaw, raw); diff != "" {
				t.Errorf("raw scores (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantNormalized, normalized); diff != "" {
				t.Errorf("normalised scores (-want +got):\n%s", diff)
			}
		})
	}
}
