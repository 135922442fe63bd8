package nodename

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
	st "github.com/klab-dev/klab/cluster/scheduler/plugins/internal/testing"
)

func TestFilter(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		want st.Result
	}{
		{
			name: "pod naming no node passes",
			pod:  st.MakePod().Obj(),
			want: st.Result{Code: framework.Success},
		},
		{
			name: "pod naming this node passes",
			pod:  st.MakePod().Node("a").Obj(),
			want: st.Result{Code: framework.Success},
		},
		{
			name: "pod naming another node is rejected for good",
			pod:  st.MakePod().Node("b").Obj(),
			want: st.Reject(framework.UnschedulableAndUnresolvable, "node(s) didn't match the requested node name"),
		},
	}
	pl, err := New(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	nodes := st.NewNodeInfos([]*v1.Node{st.MakeNode("a").Obj()}, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
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
