package tainttoleration

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
	st "github.com/klab-dev/klab/cluster/scheduler/plugins/internal/testing"
)

var untolerated = st.Reject(framework.UnschedulableAndUnresolvable, "node(s) had untolerated taint(s)")

func TestFilter(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		node *v1.Node
		want st.Result
	}{
		{
			name: "node without taints",
			pod:  st.MakePod().Obj(),
			node: st.MakeNode("a").Obj(),
			want: st.Result{Code: framework.Success},
		},
		{
			name: "untolerated NoSchedule taint rejects for good",
			pod:  st.MakePod().Obj(),
			node: st.MakeNode("a").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj(),
			want: untolerated,
		},
		{
			name: "untolerated NoExecute taint rejects",
			pod:  st.MakePod().Obj(),
			node: st.MakeNode("a").Taint("node.kubernetes.io/not-ready", "", v1.TaintEffectNoExecute).Obj(),
			want: untolerated,
		},
		{
			name: "Equal toleration with the same value tolerates",
			pod: st.MakePod().Toleration(v1.Toleration{
				Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "gpu", Effect: v1.TaintEffectNoSchedule,
			}).Obj(),
			node: st.MakeNode("a").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj(),
			want: st.Result{Code: framework.Success},
		},
		{
			name: "Equal toleration with another value does not",
			pod: st.MakePod().Toleration(v1.Toleration{
				Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "db", Effect: v1.TaintEffectNoSchedule,
			}).Obj(),
			node: st.MakeNode("a").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj(),
			want: untolerated,
		},
		{
			name: "one tolerated taint of two is not enough",
			pod: st.MakePod().Toleration(v1.Toleration{
				Key: "dedicated", Operator: v1.TolerationOpExists,
			}).Obj(),
			node: st.MakeNode("a").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).
				Taint("node-role.kubernetes.io/control-plane", "", v1.TaintEffectNoSchedule).Obj(),
			want: untolerated,
		},
		{
			name: "PreferNoSchedule taint does not filter",
			pod:  st.MakePod().Obj(),
			node: st.MakeNode("a").Taint("dedicated", "gpu", v1.TaintEffectPreferNoSchedule).Obj(),
			want: st.Result{Code: framework.Success},
		},
	}
	pl, err := New(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got, err := st.RunFilter(context.Background(), pl, tt.pod, st.NewNodeInfos([]*v1.Node{tt.node}, nil))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got[0]); diff != "" {
				t.Errorf("Filter (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScore(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode("clean").Obj(),
		st.MakeNode("one").Taint("a", "1", v1.TaintEffectPreferNoSchedule).Obj(),
		st.MakeNode("two").Taint("a", "1", v1.TaintEffectPreferNoSchedule).Taint("b", "2", v1.TaintEffectPreferNoSchedule).
			Taint("c", "3", v1.TaintEffectNoSchedule).Obj(),
	}
	tests := []struct {
		name           string
		pod            *v1.Pod
		wantRaw        []int64
		wantNormalized []int64
	}{
		{
			// Reversed: 100 - 100*count/max, max = 2.
			name:           "more intolerable PreferNoSchedule taints score lower",
			pod:            st.MakePod().Obj(),
			wantRaw:        []int64{0, 1, 2},
			wantNormalized: []int64{100, 50, 0},
		},
		{
			name: "a toleration without effect tolerates PreferNoSchedule",
			pod: st.MakePod().Toleration(v1.Toleration{Key: "a", Operator: v1.TolerationOpExists}).
				Toleration(v1.Toleration{Key: "b", Operator: v1.TolerationOpEqual, Value: "2", Effect: v1.TaintEffectPreferNoSchedule}).Obj(),
			wantRaw:        []int64{0, 0, 0},
			wantNormalized: []int64{100, 100, 100},
		},
		{
			name:           "a NoSchedule toleration does not tolerate PreferNoSchedule",
			pod:            st.MakePod().Toleration(v1.Toleration{Key: "a", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}).Obj(),
			wantRaw:        []int64{0, 1, 2},
			wantNormalized: []int64{100, 50, 0},
		},
	}
	pl, err := New(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, raw, normalized, err := st.RunScore(context.Background(), pl, tt.pod, st.NewNodeInfos(nodes, nil))
			if err != nil {
				t.Fatal(err)
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
