package plugins

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
	st "github.com/klab-dev/klab/cluster/scheduler/plugins/internal/testing"
)

// upstreamDefaults is upstream's v1 default profile
// (pkg/scheduler/apis/config/v1/default_plugins.go) without the plugins
// klab leaves out; 0 marks a plugin that does not score.
var upstreamDefaults = []struct {
	name   string
	weight int64
}{
	{"NodeUnschedulable", 0},
	{"NodeName", 0},
	{"TaintToleration", 3},
	{"NodeAffinity", 2},
	{"NodePorts", 0},
	{"NodeResourcesFit", 1},
	{"PodTopologySpread", 2},
	{"InterPodAffinity", 2},
	{"NodeResourcesBalancedAllocation", 1},
	{"ImageLocality", 1},
}

func TestDefaultProfileIsUpstreams(t *testing.T) {
	type entry struct {
		Name   string
		Weight int64
	}
	var want, got []entry
	for _, d := range upstreamDefaults {
		want = append(want, entry{d.name, d.weight})
	}
	for _, spec := range Default() {
		got = append(got, entry{spec.Name, spec.Weight})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Default() (-upstream +klab):\n%s", diff)
	}
}

func TestDefaultProfileBuilds(t *testing.T) {
	nodeInfos := st.NewNodeInfos([]*v1.Node{st.MakeNode("a").Obj()}, nil)
	handles := map[string]framework.Handle{
		"without informers": st.NewHandle(nodeInfos, nil),
		"with informers":    st.NewHandle(nodeInfos, informers.NewSharedInformerFactory(nil, 0)),
	}
	for name, h := range handles {
		t.Run(name, func(t *testing.T) {
			seen := map[string]bool{}
			for _, spec := range Default() {
				if seen[spec.Name] {
					t.Errorf("plugin %s listed twice", spec.Name)
				}
				seen[spec.Name] = true
				pl, err := spec.Factory(context.Background(), h)
				if err != nil {
					t.Errorf("building %s: %v", spec.Name, err)
					continue
				}
				if pl.Name() != spec.Name {
					t.Errorf("plugin listed as %s calls itself %s", spec.Name, pl.Name())
				}
				_, scores := pl.(framework.ScorePlugin)
				if scores != (spec.Weight > 0) {
					t.Errorf("%s: scores = %v but weight = %d", spec.Name, scores, spec.Weight)
				}
				_, filters := pl.(framework.FilterPlugin)
				if !filters && !scores {
					t.Errorf("%s neither filters nor scores", spec.Name)
				}
			}
		})
	}
}

func TestNewRegistry(t *testing.T) {
	r := NewRegistry()
	if len(r) != len(upstreamDefaults) {
		t.Errorf("registry holds %d plugins, want %d", len(r), len(upstreamDefaults))
	}
	for _, d := range upstreamDefaults {
		if r[d.name] == nil {
			t.Errorf("registry lacks %s", d.name)
		}
	}
	if err := r.Register("NodeName", r["NodeName"]); err == nil {
		t.Error("registering NodeName twice succeeded")
	}
}
