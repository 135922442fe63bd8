package interpodaffinity

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
	st "github.com/klab-dev/klab/cluster/scheduler/plugins/internal/testing"
)

const zone = v1.LabelTopologyZone

var (
	ok           = st.Result{}
	affinity     = st.Reject(framework.UnschedulableAndUnresolvable, "node(s) didn't match pod affinity rules")
	antiAffinity = st.Reject(framework.Unschedulable, "node(s) didn't match pod anti-affinity rules")
	existingAnti = st.Reject(framework.Unschedulable, "node(s) didn't satisfy existing pods anti-affinity rules")
)

// nodes: a and b in zone1, x in zone2, nozone without a zone label.
func testNodes() []*v1.Node {
	return []*v1.Node{
		st.MakeNode("a").Label(zone, "zone1").Obj(),
		st.MakeNode("b").Label(zone, "zone1").Obj(),
		st.MakeNode("x").Label(zone, "zone2").Obj(),
		st.MakeNode("nozone").Obj(),
	}
}

func TestFilter(t *testing.T) {
	db := st.MakePod().Name("db").Label("app", "db").Node("a").Obj()
	webOnA := st.MakePod().Name("web-a").Label("app", "web").Node("a").Obj()
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		wantPre  st.Result
		want     []st.Result
	}{
		{
			name:     "no terms anywhere skips the plugin",
			pod:      st.MakePod().Obj(),
			existing: []*v1.Pod{db},
			wantPre:  st.Result{Code: framework.Skip},
			want:     []st.Result{ok, ok, ok, ok},
		},
		{
			name:     "affinity: only the zone holding a matching pod",
			pod:      st.MakePod().PodAffinity(st.PodAffinityTerm(zone, "app", "db")).Obj(),
			existing: []*v1.Pod{db},
			want:     []st.Result{ok, ok, affinity, affinity},
		},
		{
			name: "affinity: a pod in another namespace does not match",
			pod:  st.MakePod().PodAffinity(st.PodAffinityTerm(zone, "app", "db")).Obj(),
			existing: []*v1.Pod{
				st.MakePod().Name("db").Namespace("other").Label("app", "db").Node("a").Obj(),
			},
			want: []st.Result{affinity, affinity, affinity, affinity},
		},
		{
			name: "affinity: a term naming the namespace matches there",
			pod: st.MakePod().PodAffinity(func() v1.PodAffinityTerm {
				term := st.PodAffinityTerm(zone, "app", "db")
				term.Namespaces = []string{"other"}
				return term
			}()).Obj(),
			existing: []*v1.Pod{
				st.MakePod().Name("db").Namespace("other").Label("app", "db").Node("x").Obj(),
			},
			want: []st.Result{affinity, affinity, ok, affinity},
		},
		{
			name: "affinity: an empty namespaceSelector matches every namespace",
			pod: st.MakePod().PodAffinity(func() v1.PodAffinityTerm {
				term := st.PodAffinityTerm(zone, "app", "db")
				term.NamespaceSelector = &metav1.LabelSelector{}
				return term
			}()).Obj(),
			existing: []*v1.Pod{
				st.MakePod().Name("db").Namespace("other").Label("app", "db").Node("x").Obj(),
			},
			want: []st.Result{affinity, affinity, ok, affinity},
		},
		{
			// Nothing in the cluster matches app=web yet, and the pod is
			// app=web itself: any node with the zone label will do.
			name: "affinity: the first pod of a self-affine group may go anywhere",
			pod:  st.MakePod().Label("app", "web").PodAffinity(st.PodAffinityTerm(zone, "app", "web")).Obj(),
			want: []st.Result{ok, ok, ok, affinity},
		},
		{
			name: "affinity: no exception for a pod that does not match itself",
			pod:  st.MakePod().Label("app", "api").PodAffinity(st.PodAffinityTerm(zone, "app", "web")).Obj(),
			want: []st.Result{affinity, affinity, affinity, affinity},
		},
		{
			name:     "affinity: once a match exists, the exception ends",
			pod:      st.MakePod().Label("app", "web").PodAffinity(st.PodAffinityTerm(zone, "app", "web")).Obj(),
			existing: []*v1.Pod{webOnA},
			want:     []st.Result{ok, ok, affinity, affinity},
		},
		{
			name:     "anti-affinity: not on the node holding a matching pod",
			pod:      st.MakePod().PodAntiAffinity(st.PodAffinityTerm(v1.LabelHostname, "app", "web")).Obj(),
			existing: []*v1.Pod{webOnA},
			want:     []st.Result{antiAffinity, ok, ok, ok},
		},
		{
			name:     "anti-affinity by zone keeps the whole zone clear; no label, no domain",
			pod:      st.MakePod().PodAntiAffinity(st.PodAffinityTerm(zone, "app", "web")).Obj(),
			existing: []*v1.Pod{webOnA},
			want:     []st.Result{antiAffinity, antiAffinity, ok, ok},
		},
		{
			name: "existing pod's anti-affinity keeps matching pods out of its zone",
			pod:  st.MakePod().Label("app", "web").Obj(),
			existing: []*v1.Pod{
				st.MakePod().Name("loner").Node("a").PodAntiAffinity(st.PodAffinityTerm(zone, "app", "web")).Obj(),
			},
			want: []st.Result{existingAnti, existingAnti, ok, ok},
		},
		{
			name: "existing pod's anti-affinity ignores pods it does not select",
			pod:  st.MakePod().Label("app", "api").Obj(),
			existing: []*v1.Pod{
				st.MakePod().Name("loner").Node("a").PodAntiAffinity(st.PodAffinityTerm(zone, "app", "web")).Obj(),
			},
			want: []st.Result{ok, ok, ok, ok},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodeInfos := st.NewNodeInfos(testNodes(), tt.existing)
			pl, err := New(context.Background(), st.NewHandle(nodeInfos, nil))
			if err != nil {
				t.Fatal(err)
			}
			pre, got, err := st.RunFilter(context.Background(), pl, tt.pod, nodeInfos)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantPre, pre); diff != "" {
				t.Errorf("PreFilter (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Filter (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFilterNamespaceSelector resolves a namespaceSelector through the
// Namespace informer.
func TestFilterNamespaceSelector(t *testing.T) {
	selectTeamA := func() v1.PodAffinityTerm {
		term := st.PodAffinityTerm(zone, "app", "db")
		term.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
		return term
	}
	existing := []*v1.Pod{
		st.MakePod().Name("db-a").Namespace("team-a").Label("app", "db").Node("a").Obj(),
		st.MakePod().Name("db-b").Namespace("team-b").Label("app", "db").Node("x").Obj(),
	}
	factory := informers.NewSharedInformerFactory(nil, 0)
	nodeInfos := st.NewNodeInfos(testNodes(), existing)
	pl, err := New(context.Background(), st.NewHandle(nodeInfos, factory))
	if err != nil {
		t.Fatal(err)
	}
	// Filled directly: the informer is never started.
	indexer := factory.Core().V1().Namespaces().Informer().GetIndexer()
	for name, team := range map[string]string{"team-a": "a", "team-b": "b"} {
		if err := indexer.Add(&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": team}}}); err != nil {
			t.Fatal(err)
		}
	}
	_, got, err := st.RunFilter(context.Background(), pl, st.MakePod().PodAffinity(selectTeamA()).Obj(), nodeInfos)
	if err != nil {
		t.Fatal(err)
	}
	want := []st.Result{ok, ok, affinity, affinity}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Filter (-want +got):\n%s", diff)
	}
}
