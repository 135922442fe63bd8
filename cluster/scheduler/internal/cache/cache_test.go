package cache

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
)

func node(name string, labels map[string]string, images ...string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	n.Status.Allocatable = v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourcePods: resource.MustParse("110")}
	for _, img := range images {
		n.Status.Images = append(n.Status.Images, v1.ContainerImage{Names: []string{img}, SizeBytes: 100})
	}
	return n
}

func pod(name, nodeName, cpu string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
	p.Spec.NodeName = nodeName
	p.Spec.Containers = []v1.Container{{Name: "c"}}
	if cpu != "" {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
	}
	return p
}

func withNode(p *v1.Pod, nodeName string) *v1.Pod {
	c := p.DeepCopy()
	c.Spec.NodeName = nodeName
	return c
}

// requested returns each node's requested milli-CPU in a fresh snapshot.
func requested(t *testing.T, c *Cache) map[string]int64 {
	t.Helper()
	s := NewEmptySnapshot()
	c.UpdateSnapshot(s)
	list, _ := s.List()
	out := map[string]int64{}
	for _, ni := range list {
		out[ni.Node().Name] = ni.Requested.MilliCPU
	}
	return out
}

func TestAssumeConfirmForget(t *testing.T) {
	tests := []struct {
		name        string
		run         func(c *Cache) error
		want        map[string]int64
		wantAssumed bool
		wantErr     bool
	}{
		{
			name: "assumed pod counts against its node",
			run:  func(c *Cache) error { return c.AssumePod(pod("a", "n1", "1")) },
			want: map[string]int64{"n1": 1000, "n2": 0}, wantAssumed: true,
		},
		{
			name: "informer confirms the assumed pod",
			run: func(c *Cache) error {
				if err := c.AssumePod(pod("a", "n1", "1")); err != nil {
					return err
				}
				return c.AddPod(pod("a", "n1", "1"))
			},
			want: map[string]int64{"n1": 1000, "n2": 0},
		},
		{
			name: "confirmation on another node moves the pod",
			run: func(c *Cache) error {
				if err := c.AssumePod(pod("a", "n1", "1")); err != nil {
					return err
				}
				return c.AddPod(pod("a", "n2", "1"))
			},
			want: map[string]int64{"n1": 0, "n2": 1000},
		},
		{
			name: "forgetting frees the node",
			run: func(c *Cache) error {
				p := pod("a", "n1", "1")
				if err := c.AssumePod(p); err != nil {
					return err
				}
				return c.ForgetPod(p)
			},
			want: map[string]int64{"n1": 0, "n2": 0},
		},
		{
			name: "assuming twice fails",
			run: func(c *Cache) error {
				if err := c.AssumePod(pod("a", "n1", "1")); err != nil {
					return err
				}
				return c.AssumePod(pod("a", "n2", "1"))
			},
			want: map[string]int64{"n1": 1000, "n2": 0}, wantAssumed: true, wantErr: true,
		},
		{
			name: "a bound pod cannot be forgotten",
			run: func(c *Cache) error {
				if err := c.AddPod(pod("a", "n1", "1")); err != nil {
					return err
				}
				return c.ForgetPod(pod("a", "n1", "1"))
			},
			want: map[string]int64{"n1": 1000, "n2": 0}, wantErr: true,
		},
		{
			name: "update replaces requests, removal frees them",
			run: func(c *Cache) error {
				if err := c.AddPod(pod("a", "n1", "1")); err != nil {
					return err
				}
				if err := c.AddPod(pod("b", "n2", "500m")); err != nil {
					return err
				}
				if err := c.UpdatePod(pod("a", "n1", "1"), pod("a", "n1", "2")); err != nil {
					return err
				}
				return c.RemovePod(pod("b", "n2", ""))
			},
			want: map[string]int64{"n1": 2000, "n2": 0},
		},
		{
			name: "an assumed pod has no update",
			run: func(c *Cache) error {
				if err := c.AssumePod(pod("a", "n1", "1")); err != nil {
					return err
				}
				return c.UpdatePod(pod("a", "n1", "1"), pod("a", "n1", "2"))
			},
			want: map[string]int64{"n1": 1000, "n2": 0}, wantAssumed: true, wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New()
			c.AddNode(node("n1", nil))
			c.AddNode(node("n2", nil))
			err := tt.run(c)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			got := requested(t, c)
			for n, want := range tt.want {
				if got[n] != want {
					t.Errorf("node %s requested %dm cpu, want %dm", n, got[n], want)
				}
			}
			if a := c.IsAssumedPod(pod("a", "", "")); a != tt.wantAssumed {
				t.Errorf("IsAssumedPod = %v, want %v", a, tt.wantAssumed)
			}
		})
	}
}

func TestRemovedNodeKeepsItsPods(t *testing.T) {
	c := New()
	c.AddNode(node("n1", nil))
	if err := c.AddPod(pod("a", "n1", "1")); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveNode(node("n1", nil)); err != nil {
		t.Fatal(err)
	}
	s := NewEmptySnapshot()
	c.UpdateSnapshot(s)
	if s.NumNodes() != 0 {
		t.Fatalf("snapshot has %d nodes after the node was removed, want 0", s.NumNodes())
	}
	if _, err := s.Get("n1"); err == nil {
		t.Fatal("Get(n1) found a removed node")
	}
	// The node comes back under the same name: its pod still counts.
	c.AddNode(node("n1", nil))
	c.UpdateSnapshot(s)
	ni, err := s.Get("n1")
	if err != nil {
		t.Fatal(err)
	}
	if ni.Requested.MilliCPU != 1000 {
		t.Fatalf("re-created node requests %dm cpu, want 1000m", ni.Requested.MilliCPU)
	}
	// Once the pod goes and the node goes, nothing is left.
	if err := c.RemovePod(pod("a", "n1", "")); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveNode(node("n1", nil)); err != nil {
		t.Fatal(err)
	}
	if got := len(c.nodes); got != 0 {
		t.Fatalf("cache keeps %d node entries, want 0", got)
	}
}

func TestSnapshotCopiesOnlyChangedNodes(t *testing.T) {
	c := New()
	c.AddNode(node("n1", nil))
	c.AddNode(node("n2", nil))
	s := NewEmptySnapshot()
	c.UpdateSnapshot(s)
	n1, _ := s.Get("n1")
	n2, _ := s.Get("n2")

	if err := c.AddPod(pod("a", "n2", "1")); err != nil {
		t.Fatal(err)
	}
	c.UpdateSnapshot(s)
	n1After, _ := s.Get("n1")
	n2After, _ := s.Get("n2")
	if n1After != n1 {
		t.Error("unchanged node n1 was copied again")
	}
	if n2After == n2 || n2After.Requested.MilliCPU != 1000 {
		t.Errorf("changed node n2 not refreshed: same copy %v, requested %dm", n2After == n2, n2After.Requested.MilliCPU)
	}
	if n2.Requested.MilliCPU != 0 {
		t.Error("the old snapshot copy of n2 changed under a reader")
	}

	// A node deleted and re-created between two snapshots is refreshed
	// even though its own change count starts again.
	if err := c.RemovePod(pod("a", "n2", "")); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveNode(node("n2", nil)); err != nil {
		t.Fatal(err)
	}
	c.AddNode(node("n2", map[string]string{"new": "yes"}))
	c.UpdateSnapshot(s)
	n2New, _ := s.Get("n2")
	if n2New.Node().Labels["new"] != "yes" || n2New.Requested.MilliCPU != 0 {
		t.Errorf("re-created n2 not refreshed: labels %v requested %dm", n2New.Node().Labels, n2New.Requested.MilliCPU)
	}
}

func TestSnapshotImageNumNodes(t *testing.T) {
	c := New()
	c.AddNode(node("n1", nil, "app:v1", "db:v1"))
	c.AddNode(node("n2", nil, "app:v1"))
	c.AddNode(node("n3", nil))
	s := NewEmptySnapshot()
	c.UpdateSnapshot(s)
	n1, _ := s.Get("n1")
	if got := n1.ImageStates["app:v1"].NumNodes; got != 2 {
		t.Errorf("app:v1 on %d nodes, want 2", got)
	}
	if got := n1.ImageStates["db:v1"].NumNodes; got != 1 {
		t.Errorf("db:v1 on %d nodes, want 1", got)
	}
	// n2 goes: n1's copy, itself unchanged, must learn that app:v1 is now
	// on one node only.
	if err := c.RemoveNode(node("n2", nil)); err != nil {
		t.Fatal(err)
	}
	c.UpdateSnapshot(s)
	n1, _ = s.Get("n1")
	if got := n1.ImageStates["app:v1"].NumNodes; got != 1 {
		t.Errorf("after n2 left, app:v1 on %d nodes, want 1", got)
	}
}

func TestSnapshotAffinityLists(t *testing.T) {
	affinity := pod("aff", "n1", "")
	affinity.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{}}
	anti := pod("anti", "n2", "")
	anti.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname"}},
	}}
	s := NewSnapshot([]*v1.Pod{affinity, anti, pod("plain", "n3", "")},
		[]*v1.Node{node("n1", nil), node("n2", nil), node("n3", nil)})
	names := func(list []*framework.NodeInfo, _ error) []string {
		var out []string
		for _, ni := range list {
			out = append(out, ni.Node().Name)
		}
		return out
	}
	if got := names(s.HavePodsWithAffinityList()); len(got) != 2 || got[0] != "n1" || got[1] != "n2" {
		t.Errorf("HavePodsWithAffinityList = %v, want [n1 n2]", got)
	}
	if got := names(s.HavePodsWithRequiredAntiAffinityList()); len(got) != 1 || got[0] != "n2" {
		t.Errorf("HavePodsWithRequiredAntiAffinityList = %v, want [n2]", got)
	}
}
