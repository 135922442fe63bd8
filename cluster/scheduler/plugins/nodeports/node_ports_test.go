package nodeports

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
	st "github.com/klab-dev/klab/cluster/scheduler/plugins/internal/testing"
)

func TestFilter(t *testing.T) {
	taken := st.Reject(framework.Unschedulable, "node(s) didn't have free ports for the requested pod ports")
	always := v1.ContainerRestartPolicyAlways
	sidecar := st.MakePod().Obj()
	sidecar.Spec.InitContainers = []v1.Container{{
		Name: "proxy", Image: "proxy", RestartPolicy: &always,
		Ports: []v1.ContainerPort{{HostPort: 8080, ContainerPort: 8080}},
	}}
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing *v1.Pod
		wantPre  st.Result
		want     st.Result
	}{
		{
			name:    "pod without host ports skips the plugin",
			pod:     st.MakePod().Req(nil).Obj(),
			wantPre: st.Result{Code: framework.Skip},
		},
		{
			name:     "same port, both on all addresses",
			pod:      st.MakePod().HostPort("", "", 8080).Obj(),
			existing: st.MakePod().Name("old").HostPort("", "", 8080).Obj(),
			want:     taken,
		},
		{
			name:     "same port, other protocol",
			pod:      st.MakePod().HostPort("", v1.ProtocolUDP, 8080).Obj(),
			existing: st.MakePod().Name("old").HostPort("", v1.ProtocolTCP, 8080).Obj(),
		},
		{
			name:     "empty protocol means TCP",
			pod:      st.MakePod().HostPort("", "", 53).Obj(),
			existing: st.MakePod().Name("old").HostPort("", v1.ProtocolTCP, 53).Obj(),
			want:     taken,
		},
		{
			name:     "two distinct addresses share a port",
			pod:      st.MakePod().HostPort("127.0.0.1", v1.ProtocolTCP, 8080).Obj(),
			existing: st.MakePod().Name("old").HostPort("10.0.0.1", v1.ProtocolTCP, 8080).Obj(),
		},
		{
			name:     "one address clashes with the same address",
			pod:      st.MakePod().HostPort("10.0.0.1", v1.ProtocolTCP, 8080).Obj(),
			existing: st.MakePod().Name("old").HostPort("10.0.0.1", v1.ProtocolTCP, 8080).Obj(),
			want:     taken,
		},
		{
			name:     "0.0.0.0 clashes with any address",
			pod:      st.MakePod().HostPort("0.0.0.0", v1.ProtocolTCP, 8080).Obj(),
			existing: st.MakePod().Name("old").HostPort("127.0.0.1", v1.ProtocolTCP, 8080).Obj(),
			want:     taken,
		},
		{
			name:     "an address clashes with 0.0.0.0 in use",
			pod:      st.MakePod().HostPort("127.0.0.1", v1.ProtocolTCP, 8080).Obj(),
			existing: st.MakePod().Name("old").HostPort("", v1.ProtocolTCP, 8080).Obj(),
			want:     taken,
		},
		{
			name:     "other port is free",
			pod:      st.MakePod().HostPort("", "", 8081).Obj(),
			existing: st.MakePod().Name("old").HostPort("", "", 8080).Obj(),
		},
		{
			name:     "a sidecar's host port counts",
			pod:      sidecar,
			existing: st.MakePod().Name("old").HostPort("", "", 8080).Obj(),
			want:     taken,
		},
	}
	pl, err := New(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pods []*v1.Pod
			if tt.existing != nil {
				pods = append(pods, tt.existing.DeepCopy())
				pods[0].Spec.NodeName = "a"
			}
			nodes := st.NewNodeInfos([]*v1.Node{st.MakeNode("a").Obj()}, pods)
			pre, got, err := st.RunFilter(context.Background(), pl, tt.pod, nodes)
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
