package podtopologyspread

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
	st "github.com/klab-dev/klab/cluster/scheduler/plugins/internal/testing"
)

const zone = v1.LabelTopologyZone

func ptr[T any](v T) *T { return &v }

func TestFilter(t *testing.T) {
	ok := st.Result{}
	skew := st.Reject(framework.Unschedulable, "node(s) didn't match pod topology spread constraints")
	noLabel := st.Reject(framework.UnschedulableAndUnresolvable, "node(s) didn't match pod topology spread constraints (missing required label)")

	// zone1: a, b; zone2: x, y. Matching pods: 2 in zone1, 1 in zone2.
	nodes := []*v1.Node{
		st.MakeNode("a").Label(zone, "zone1").Obj(),
		st.MakeNode("b").Label(zone, "zone1").Obj(),
		st.MakeNode("x").Label(zone, "zone2").Obj(),
		st.MakeNode("y").Label(zone, "zone2").Obj(),
	}
	existing := []*v1.Pod{
		st.MakePod().Name("p1").Label("app", "web").Node("a").Obj(),
		st.MakePod().Name("p2").Label("app", "web").Node("b").Obj(),
		st.MakePod().Name("p3").Label("app", "web").Node("x").Obj(),
		// Not counted: another app, another namespace, terminating.
		st.MakePod().Name("p4").Label("app", "db").Node("x").Obj(),
		st.MakePod().Name("p5").Label("app", "web").Namespace("other").Node("x").Obj(),
		st.MakePod().Name("p6").Label("app", "web").Node("y").Terminating().Obj(),
	}
	web := func() *st.PodWrapper { return st.MakePod().Label("app", "web") }

	tests := []struct {
		name    string
		pod     *v1.Pod
		nodes   []*v1.Node
		wantPre st.Result
		want    []st.Result
	}{
		{
			name:    "pod without DoNotSchedule constraints skips the plugin",
			pod:     web().SpreadConstraint(1, zone, v1.ScheduleAnyway, "app", "web", nil).Obj(),
			wantPre: st.Result{Code: framework.Skip},
			want:    []st.Result{ok, ok, ok, ok},
		},
		{
			// zone1: 2 + 1 - 1 = 2 > 1; zone2: 1 + 1 - 1 = 1.
			name: "placing in the fuller zone would exceed maxSkew",
			pod:  web().SpreadConstraint(1, zone, v1.DoNotSchedule, "app", "web", nil).Obj(),
			want: []st.Result{skew, skew, ok, ok},
		},
		{
			name: "maxSkew 2 allows both zones",
			pod:  web().SpreadConstraint(2, zone, v1.DoNotSchedule, "app", "web", nil).Obj(),
			want: []st.Result{ok, ok, ok, ok},
		},
		{
			// zone1: 2 + 0 - 1 = 1.
			name: "a pod its selector does not match adds no skew",
			pod:  st.MakePod().Label("app", "other").SpreadConstraint(1, zone, v1.DoNotSchedule, "app", "web", nil).Obj(),
			want: []st.Result{ok, ok, ok, ok},
		},
		{
			// Two domains < minDomains 3: the global minimum is 0, so
			// zone2 gives 1 + 1 - 0 = 2 > 1 too.
			name: "fewer domains than minDomains makes the minimum 0",
			pod:  web().SpreadConstraint(1, zone, v1.DoNotSchedule, "app", "web", ptr[int32](3)).Obj(),
			want: []st.Result{skew, skew, skew, skew},
		},
		{
			name:  "node without the topology key is rejected for good",
			pod:   web().SpreadConstraint(1, zone, v1.DoNotSchedule, "app", "web", nil).Obj(),
			nodes: append(nodes[:4:4], st.MakeNode("nolabel").Obj()),
			want:  []st.Result{skew, skew, ok, ok, noLabel},
		},
		{
			// Honor (the default): only zone1 nodes count, the minimum is
			// zone1's 2, and 2 + 1 - 2 = 1.
			name: "nodes the pod's nodeSelector excludes do not count",
			pod: web().NodeSelector(map[string]string{zone: "zone1"}).
				SpreadConstraint(1, zone, v1.DoNotSchedule, "app", "web", nil).Obj(),
			want: []st.Result{ok, ok, ok, ok},
		},
		{
			// Hostname domains: a, b, x hold 1 each, y 0 (its pod is
			// terminating). a: 1 + 1 - 0 = 2 > 1.
			name: "hostname spreading",
			pod:  web().SpreadConstraint(1, v1.LabelHostname, v1.DoNotSchedule, "app", "web", nil).Obj(),
			want: []st.Result{skew, skew, skew, ok},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := nodes
			if tt.nodes != nil {
				ns = tt.nodes
			}
			nodeInfos := st.NewNodeInfos(ns, existing)
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

func TestFilterNodeInclusionPolicies(t *testing.T) {
	ok := st.Result{}
	skew := st.Reject(framework.Unschedulable, "node(s) didn't match pod topology spread constraints")
	// zone1 holds 1 matching pod, zone2 none; zone2's only node is tainted.
	nodes := []*v1.Node{
		st.MakeNode("a").Label(zone, "zone1").Obj(),
		st.MakeNode("t").Label(zone, "zone2").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj(),
	}
	existing := []*v1.Pod{st.MakePod().Name("p1").Label("app", "web").Node("a").Obj()}
	honor, ignore := v1.NodeInclusionPolicyHonor, v1.NodeInclusionPolicyIgnore
	tests := []struct {
		name             string
		affinity, taints *v1.NodeInclusionPolicy
		nodeSelector     map[string]string
		want             []st.Result
	}{
		{
			// zone2 counts with 0 pods: a gives 1 + 1 - 0 = 2 > 1.
			name: "taints ignored by default",
			want: []st.Result{skew, ok},
		},
		{
			// zone2 drops out: the minimum is zone1's 1, a gives 1.
			name:   "nodeTaintsPolicy Honor leaves out the tainted node",
			taints: &honor,
			want:   []st.Result{ok, ok},
		},
		{
			// The selector keeps zone1 only, but Ignore counts zone2.
			name:         "nodeAffinityPolicy Ignore counts nodes the selector excludes",
			affinity:     &ignore,
			nodeSelector: map[string]string{zone: "zone1"},
			want:         []st.Result{skew, ok},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := st.MakePod().Label("app", "web").NodeSelector(tt.nodeSelector).
				SpreadConstraint(1, zone, v1.DoNotSchedule, "app", "web", nil).Obj()
			pod.Spec.TopologySpreadConstraints[0].NodeAffinityPolicy = tt.affinity
			pod.Spec.TopologySpreadConstraints[0].NodeTaintsPolicy = tt.taints
			nodeInfos := st.NewNodeInfos(nodes, existing)
			pl, err := New(context.Background(), st.NewHandle(nodeInfos, nil))
			if err != nil {
				t.Fatal(err)
			}
			_, got, err := st.RunFilter(context.Background(), pl, pod, nodeInfos)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Filter (-want +got):\n%s", diff)
			}
		})
	}
}
