package nodeunschedulable

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
	st "github.com/klab-dev/klab/cluster/scheduler/plugins/internal/testing"
)

func TestFilter(t *testing.T) {
	unschedulableToleration := v1.Toleration{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}
	tests := []struct {
		name string
		pod  *v1.Pod
		node *v1.Node
		want st.Result
	}{
		{
			name: "schedulable node passes",
			pod:  st.MakePod().Obj(),
			node: st.MakeNode("a").Obj(),
		},
		{
			name: "cordoned node is rejected for good",
			pod:  st.MakePod().Obj(),
			node: st.MakeNode("a").Unschedulable().Obj(),
			want: st.Reject(framework.UnschedulableAndUnresolvable, "node(s) were unschedulable"),
		},
		{
			name: "pod tolerating the unschedulable taint passes a cordoned node",
			pod:  st.MakePod().Toleration(unschedulableToleration).Obj(),
			node: st.MakeNode("a").Unschedulable().Obj(),
		},
		{
			name: "a toleration of every taint passes a cordoned node",
			pod:  st.MakePod().Toleration(v1.Toleration{Operator: v1.TolerationOpExists}).Obj(),
			node: st.MakeNode("a").Unschedulable().Obj(),
		},
		{
			name: "tolerating the taint for NoExecute only is not enough",
			pod: st.MakePod().Toleration(v1.Toleration{
				Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute,
			}).Obj(),
			node: st.MakeNode("a").Unschedulable().Obj(),
			want: st.Reject(framework.UnschedulableAndUnresolvable, "node(s) were unschedulable"),
		},
	}
	pl, err := New(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ni := framework.NewNodeInfo()
			ni.SetNode(tt.node)
			got := st.Summary(pl.(*NodeUnschedulable).Filter(context.Background(), framework.NewCycleState(), tt.pod, ni))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Filter (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFilterWithoutNode(t *testing.T) {
	got := st.Summary((&NodeUnschedulable{}).Filter(context.Background(), framework.NewCycleState(), st.MakePod().Obj(), framework.NewNodeInfo()))
	want := st.Reject(framework.UnschedulableAndUnresolvable, "node(s) had unknown conditions")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Filter (-want +got):\n%s", diff)
	}
}
