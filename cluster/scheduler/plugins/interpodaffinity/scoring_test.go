package interpodaffinity

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
	st "github.com/klab-dev/klab/cluster/scheduler/plugins/internal/testing"
)

func TestScore(t *testing.T) {
	tests := []struct {
		name           string
		pod            *v1.Pod
		existing       []*v1.Pod
		wantSkip       bool
		wantRaw        []int64
		wantNormalized []int64
	}{
		{
			name:     "nothing to prefer skips scoring",
			pod:      st.MakePod().Label("app", "web").Obj(),
			existing: []*v1.Pod{st.MakePod().Name("db").Label("app", "db").Node("a").Obj()},
			wantSkip: true,
		},
		{
			// zone1 holds the db pod: a, b +5; min-max over [0, 5].
			name:           "preferred affinity draws to the matching zone",
			pod:            st.MakePod().PreferredPodAffinity(5, st.PodAffinityTerm(zone, "app", "db")).Obj(),
			existing:       []*v1.Pod{st.MakePod().Name("db").Label("app", "db").Node("a").Obj()},
			wantRaw:        []int64{5, 5, 0, 0},
			wantNormalized: []int64{100, 100, 0, 0},
		},
		{
			// a: -3; min-max over [-3, 0]: a 0, the rest 100.
			name:           "preferred anti-affinity pushes off the matching node",
			pod:            st.MakePod().PreferredPodAntiAffinity(3, st.PodAffinityTerm(v1.LabelHostname, "app", "web")).Obj(),
			existing:       []*v1.Pod{st.MakePod().Name("web").Label("app", "web").Node("a").Obj()},
			wantRaw:        []int64{-3, 0, 0, 0},
			wantNormalized: []int64{0, 100, 100, 100},
		},
		{
			// a, b: +5 - 2 = 3; x: 0. min-max over [0, 3].
			name: "affinity and anti-affinity weights add up",
			pod: st.MakePod().PreferredPodAffinity(5, st.PodAffinityTerm(zone, "app", "db")).
				PreferredPodAntiAffinity(2, st.PodAffinityTerm(zone, "app", "web")).Obj(),
			existing: []*v1.Pod{
				st.MakePod().Name("db").Label("app", "db").Node("a").Obj(),
				st.MakePod().Name("web").Label("app", "web").Node("b").Obj(),
			},
			wantRaw:        []int64{3, 3, 0, 0},
			wantNormalized: []int64{100, 100, 0, 0},
		},
		{
			// An existing pod's required affinity that selects the incoming
			// pod draws it with weight 1 (HardPodAffinityWeight).
			name: "existing pod's required affinity counts with weight 1",
			pod:  st.MakePod().Label("app", "web").Obj(),
			existing: []*v1.Pod{
				st.MakePod().Name("cache").Node("a").PodAffinity(st.PodAffinityTerm(v1.LabelHostname, "app", "web")).Obj(),
			},
			wantRaw:        []int64{1, 0, 0, 0},
			wantNormalized: []int64{100, 0, 0, 0},
		},
		{
			// The existing pod on x prefers app=web out of zone2: x -4.
			// Its preferred affinity draws app=web to a's host: a +2.
			// min-max over [-4, 2]: a 100, b and nozone 4*100/6 = 66, x 0.
			name: "existing pods' preferred terms count both ways",
			pod:  st.MakePod().Label("app", "web").Obj(),
			existing: []*v1.Pod{
				st.MakePod().Name("loner").Node("x").PreferredPodAntiAffinity(4, st.PodAffinityTerm(zone, "app", "web")).Obj(),
				st.MakePod().Name("friend").Node("a").PreferredPodAffinity(2, st.PodAffinityTerm(v1.LabelHostname, "app", "web")).Obj(),
			},
			wantRaw:        []int64{2, 0, -4, 0},
			wantNormalized: []int64{100, 66, 0, 66},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodeInfos := st.NewNodeInfos(testNodes(), tt.existing)
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
