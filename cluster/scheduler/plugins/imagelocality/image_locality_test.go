package imagelocality

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	st "github.com/klab-dev/klab/cluster/scheduler/plugins/internal/testing"
)

func TestScore(t *testing.T) {
	// Three nodes: the 40MB image on node1 only, the 300MB image on node1
	// and node2, the 2000MB image on node3 only.
	nodes := []*v1.Node{
		st.MakeNode("node1").Image(40*mb, "gcr.io/40:latest").Image(300*mb, "gcr.io/300:latest").Obj(),
		st.MakeNode("node2").Image(300*mb, "gcr.io/300:latest").Obj(),
		st.MakeNode("node3").Image(2000*mb, "gcr.io/2000:latest").Obj(),
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		want []int64
	}{
		{
			// Range for 2 containers: [23MB, 2000MB].
			// node1: 40MB*1/3 + 300MB*2/3 = 223696213 bytes;
			//   100*(223696213-23MB)/(2000MB-23MB) = 9.6 -> 9.
			// node2: 300MB*2/3 = 209715200; 100*(209715200-23MB)/... = 8.9 -> 8.
			// node3: neither image; the sum is clamped to 23MB -> 0.
			name: "images scaled by how many nodes hold them",
			pod:  st.MakePod().Container("gcr.io/40", nil).Container("gcr.io/300:latest", nil).Obj(),
			want: []int64{9, 8, 0},
		},
		{
			// node3: 2000MB*1/3 = 699050666; range [23MB, 1000MB]:
			// 100*(699050666-23MB)/(1000MB-23MB) = 65.9 -> 65.
			name: "a big image on one node of three",
			pod:  st.MakePod().Container("gcr.io/2000", nil).Obj(),
			want: []int64{0, 0, 65},
		},
		{
			name: "an image scaled below 23MB scores 0",
			pod:  st.MakePod().Container("gcr.io/40", nil).Obj(),
			want: []int64{0, 0, 0},
		},
		{
			name: "another tag is another image",
			pod:  st.MakePod().Container("gcr.io/2000:v2", nil).Obj(),
			want: []int64{0, 0, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodeInfos := st.NewNodeInfos(nodes, nil)
			pl, err := New(context.Background(), st.NewHandle(nodeInfos, nil))
			if err != nil {
				t.Fatal(err)
			}
			_, raw, normalized, err := st.RunScore(context.Background(), pl, tt.pod, nodeInfos)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, raw); diff != "" {
				t.Errorf("scores (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(raw, normalized); diff != "" {
				t.Errorf("no NormalizeScore, yet scores changed (-raw +normalised):\n%s", diff)
			}
		})
	}
}

func TestNewNeedsHandle(t *testing.T) {
	if _, err := New(context.Background(), nil); err == nil {
		t.Error("New with a nil handle succeeded")
	}
}
