package podtopologyspread

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
	st "github.com/klab-dev/klab/cluster/scheduler/plugins/internal/testing"
)

func TestScore(t *testing.T) {
	web := func() *st.PodWrapper { return st.MakePod().Label("app", "web") }
	tests := []struct {
		name           string
		pod            *v1.Pod
		nodes          []*v1.Node
		existing       []*v1.Pod
		wantSkip       bool
		wantRaw        []int64
		wantNormalized []int64
	}{
		{
			name:     "pod without constraints and without siblings skips",
			pod:      web().Obj(),
			nodes:    []*v1.Node{st.MakeNode("a").Obj()},
			wantSkip: true,
		},
		{
			// Hostname: 2 filtered nodes, weight ln(2+2) = 1.386.
			// a: 2*1.386 + (1-1) = 2.77 -> 3; b: 0.
			// Normalised 100*(max+min-score)/max: a 0, b 100.
			name:  "hostname: the node with fewer matching pods wins",
			pod:   web().SpreadConstraint(1, v1.LabelHostname, v1.ScheduleAnyway, "app", "web", nil).Obj(),
			nodes: []*v1.Node{st.MakeNode("a").Obj(), st.MakeNode("b").Obj()},
			existing: []*v1.Pod{
				web().Name("p1").Node("a").Obj(), web().Name("p2").Node("a").Obj(),
			},
			wantRaw:        []int64{3, 0},
			wantNormalized: []int64{0, 100},
		},
		{
			// Zone: 2 domains, weight ln(4) = 1.386. zone1 holds 2, zone2 1.
			// a, b: 2*1.386 = 2.77 -> 3; x: 1.386 -> 1.
			// Normalised: a, b 100*(3+1-3)/3 = 33; x 100*(3+1-1)/3 = 100.
			name: "zone: the emptier zone wins",
			pod:  web().SpreadConstraint(1, zone, v1.ScheduleAnyway, "app", "web", nil).Obj(),
			nodes: []*v1.Node{
				st.MakeNode("a").Label(zone, "zone1").Obj(),
				st.MakeNode("b").Label(zone, "zone1").Obj(),
				st.MakeNode("x").Label(zone, "zone2").Obj(),
			},
			existing: []*v1.Pod{
				web().Name("p1").Node("a").Obj(), web().Name("p2").Node("b").Obj(), web().Name("p3").Node("x").Obj(),
			},
			wantRaw:        []int64{3, 3, 1},
			wantNormalized: []int64{33, 33, 100},
		},
		{
			// The node without a zone label is ignored: raw 0, normalised 0.
			// a: zone1 has 1 pod, weight ln(1+2) = 1.099 -> 1; x: 0.
			name: "a node without the pod's topology key scores 0",
			pod:  web().SpreadConstraint(1, zone, v1.ScheduleAnyway, "app", "web", nil).Obj(),
			nodes: []*v1.Node{
				st.MakeNode("a").Label(zone, "zone1").Obj(),
				st.MakeNode("nolabel").Obj(),
			},
			existing:       []*v1.Pod{web().Name("p1").Node("a").Obj()},
			wantRaw:        []int64{1, 0},
			wantNormalized: []int64{100, 0},
		},
		{
			// maxSkew 5 adds 4 to every node: a 2.77 + 4 -> 7, b 4.
			// Normalised: a 100*(7+4-7)/7 = 57, b 100*(7+4-4)/7 = 100.
			name:  "a larger maxSkew blurs the difference",
			pod:   web().SpreadConstraint(5, v1.LabelHostname, v1.ScheduleAnyway, "app", "web", nil).Obj(),
			nodes: []*v1.Node{st.MakeNode("a").Obj(), st.MakeNode("b").Obj()},
			existing: []*v1.Pod{
				web().Name("p1").Node("a").Obj(), web().Name("p2").Node("a").Obj(),
			},
			wantRaw:        []int64{7, 4},
			wantNormalized: []int64{57, 100},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodeInfos := st.NewNodeInfos(tt.nodes, tt.existing)
			pl, err := New(context.Background(), st.NewHandle(nodeInfos, nil))
			if err != nil {
				t.Fatal(err)
			}
			pre, raw, normalized, err := st.RunScore(context.Background(), pl, tt.pod, nodeInfos)
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

// TestScoreSystemDefaults covers a pod without constraints that a Service
// or a ReplicaSet selects: upstream's defaults spread it over hostname
// (maxSkew 3) and zone (maxSkew 5).
func TestScoreSystemDefaults(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode("a").Label(zone, "zone1").Obj(),
		st.MakeNode("b").Label(zone, "zone1").Obj(),
		st.MakeNode("x").Label(zone, "zone2").Obj(),
		// No zone label: with the system defaults it still spreads by
		// hostname instead of being ignored.
		st.MakeNode("nozone").Obj(),
	}
	existing := []*v1.Pod{
		st.MakePod().Name("p1").Label("app", "web").Node("a").Obj(),
		st.MakePod().Name("p2").Label("app", "web").Node("a").Obj(),
	}
	service := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       v1.ServiceSpec{Selector: map[string]string{"app": "web"}},
	}
	replicaSet := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-rs", Namespace: "default"},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
	tests := []struct {
		name     string
		pod      *v1.Pod
		objects  []any
		factory  bool
		wantSkip bool
		// Hostname: 4 nodes, weight ln(6) = 1.792. Zone: domains zone1,
		// zone2 and "" (nozone), weight ln(5) = 1.609.
		//   a:      2*1.792 + 2 + 2*1.609 + 4 = 12.80 -> 13
		//   b:      0       + 2 + 2*1.609 + 4 =  9.22 ->  9
		//   x:      0       + 2 + 0       + 4 =  6
		//   nozone: 0       + 2 (no zone label, no zone term) = 2
		// Normalised 100*(13+2-score)/13: 15, 46, 69, 100.
		wantRaw        []int64
		wantNormalized []int64
	}{
		{
			name:     "without informers there are no defaults",
			pod:      st.MakePod().Label("app", "web").Obj(),
			wantSkip: true,
		},
		{
			name:     "a pod nothing selects has no defaults",
			pod:      st.MakePod().Label("app", "web").Obj(),
			factory:  true,
			wantSkip: true,
		},
		{
			name:           "a Service's selector finds the siblings",
			pod:            st.MakePod().Label("app", "web").Obj(),
			objects:        []any{service},
			factory:        true,
			wantRaw:        []int64{13, 9, 6, 2},
			wantNormalized: []int64{15, 46, 69, 100},
		},
		{
			name:           "the owning ReplicaSet's selector finds the siblings",
			pod:            st.MakePod().Label("app", "web").Owner("apps/v1", "ReplicaSet", "web-rs").Obj(),
			objects:        []any{replicaSet},
			factory:        true,
			wantRaw:        []int64{13, 9, 6, 2},
			wantNormalized: []int64{15, 46, 69, 100},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var factory framework.SharedInformerFactory
			if tt.factory {
				// The informers are never started: the test fills their
				// caches directly, as a synced informer would hold them.
				factory = informers.NewSharedInformerFactory(nil, 0)
			}
			nodeInfos := st.NewNodeInfos(nodes, existing)
			pl, err := New(context.Background(), st.NewHandle(nodeInfos, factory))
			if err != nil {
				t.Fatal(err)
			}
			for _, obj := range tt.objects {
				var err error
				switch o := obj.(type) {
				case *v1.Service:
					err = factory.Core().V1().Services().Informer().GetIndexer().Add(o)
				case *appsv1.ReplicaSet:
					err = factory.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(o)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			pre, raw, normalized, err := st.RunScore(context.Background(), pl, tt.pod, nodeInfos)
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
