package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/klab-dev/klab/cluster/scheduler/framework"
	frameworkruntime "github.com/klab-dev/klab/cluster/scheduler/framework/runtime"
	"github.com/klab-dev/klab/cluster/scheduler/internal/cache"
	tp "github.com/klab-dev/klab/cluster/scheduler/internal/testplugins"
)

func testNode(name, cpu string, labels map[string]string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	n.Status.Allocatable = v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse(cpu),
		v1.ResourceMemory: resource.MustParse("4Gi"),
		v1.ResourcePods:   resource.MustParse("110"),
	}
	return n
}

func testPod(name, cpu string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
	p.Spec.Containers = []v1.Container{{Name: "app", Image: "klab/app"}}
	if cpu != "" {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
	}
	return p
}

func newAlgorithm(t *testing.T, snapshot *cache.Snapshot, profile ...framework.PluginSpec) *algorithm {
	t.Helper()
	fwk, err := frameworkruntime.NewFramework(context.Background(), profile, nil, frameworkruntime.WithParallelism(4))
	if err != nil {
		t.Fatal(err)
	}
	return &algorithm{fwk: fwk, snapshot: snapshot, rng: rand.New(rand.NewPCG(1, 2))}
}

func TestNumFeasibleNodesToFind(t *testing.T) {
	tests := []struct{ nodes, want int }{
		{0, 0}, {3, 3}, {99, 99},
		{100, 100},   // 50% would be 50: at least 100
		{150, 100},   // 49% = 73: at least 100
		{1000, 420},  // 50 - 8 = 42%
		{5000, 500},  // 50 - 40 = 10%
		{6000, 300},  // 50 - 48 = 2%: at least 5%
		{10000, 500}, // 5%
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.nodes), func(t *testing.T) {
			if got := numFeasibleNodesToFind(tt.nodes); got != tt.want {
				t.Errorf("numFeasibleNodesToFind(%d) = %d, want %d", tt.nodes, got, tt.want)
			}
		})
	}
}

func TestSchedulePodRecordsEveryVerdict(t *testing.T) {
	snapshot := cache.NewSnapshot(nil, []*v1.Node{
		testNode("worker-1", "1", map[string]string{"disk": "ssd"}),
		testNode("worker-2", "4", map[string]string{"disk": "hdd"}),
		testNode("worker-3", "4", map[string]string{"disk": "ssd"}),
	})
	a := newAlgorithm(t, snapshot, tp.Spec(tp.NodeSelector{}, 0), tp.Spec(tp.Fit{}, 1))
	pod := testPod("web", "2")
	pod.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	d := &Decision{}
	host, err := a.schedulePod(context.Background(), framework.NewCycleState(), pod, d)
	if err != nil {
		t.Fatal(err)
	}
	if host != "worker-3" {
		t.Fatalf("host = %s, want worker-3", host)
	}
	want := []NodeFilter{
		{Node: "worker-1", Plugins: []frameworkruntime.PluginVerdict{
			{Plugin: "NodeAffinity", Verdict: "passed"},
			{Plugin: "NodeResourcesFit", Verdict: "rejected", Code: "Unschedulable", Reasons: []string{"Insufficient cpu"}},
		}},
		{Node: "worker-2", Plugins: []frameworkruntime.PluginVerdict{
			{Plugin: "NodeAffinity", Verdict: "rejected", Code: "UnschedulableAndUnresolvable", Reasons: []string{"node(s) didn't match Pod's node affinity/selector"}},
			{Plugin: "NodeResourcesFit", Verdict: "not-evaluated"},
		}},
		{Node: "worker-3", Feasible: true, Plugins: []frameworkruntime.PluginVerdict{
			{Plugin: "NodeAffinity", Verdict: "passed"}, {Plugin: "NodeResourcesFit", Verdict: "passed"},
		}},
	}
	if diff := cmp.Diff(want, d.Filter); diff != "" {
		t.Errorf("filter record (-want +got):\n%s", diff)
	}
	if d.NumNodes != 3 || d.EvaluatedNodes != 3 || d.FeasibleNodes != 1 || d.ScoringSkipped != "only one feasible node" {
		t.Errorf("counts %d/%d/%d, scoring skipped %q", d.NumNodes, d.EvaluatedNodes, d.FeasibleNodes, d.ScoringSkipped)
	}
}

func TestSchedulePodUnschedulable(t *testing.T) {
	snapshot := cache.NewSnapshot(nil, []*v1.Node{
		testNode("worker-1", "1", map[string]string{"disk": "ssd"}),
		testNode("worker-2", "4", map[string]string{"disk": "hdd"}),
		testNode("worker-3", "4", map[string]string{"disk": "hdd"}),
	})
	a := newAlgorithm(t, snapshot, tp.Spec(tp.NodeSelector{}, 0), tp.Spec(tp.Fit{}, 1))
	pod := testPod("web", "2")
	pod.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	d := &Decision{}
	_, err := a.schedulePod(context.Background(), framework.NewCycleState(), pod, d)
	var fitErr *FitError
	if !errors.As(err, &fitErr) {
		t.Fatalf("err = %v, want a FitError", err)
	}
	want := "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node affinity/selector."
	if got := fitErr.Error(); got != want {
		t.Errorf("message =\n%q\nwant\n%q", got, want)
	}
	if got := fitErr.UnschedulablePlugins; !cmp.Equal(got, []string{"NodeAffinity", "NodeResourcesFit"}) {
		t.Errorf("UnschedulablePlugins = %v", got)
	}
	if d.FeasibleNodes != 0 || d.EvaluatedNodes != 3 || len(d.Filter) != 3 {
		t.Errorf("feasible %d, evaluated %d, filter records %d", d.FeasibleNodes, d.EvaluatedNodes, len(d.Filter))
	}
}

func TestSchedulePodPreFilterRejects(t *testing.T) {
	snapshot := cache.NewSnapshot(nil, []*v1.Node{testNode("worker-1", "4", nil), testNode("worker-2", "4", nil)})
	a := newAlgorithm(t, snapshot, tp.Spec(&tp.PreFilterFilter{
		PluginName:      "InterPodAffinity",
		PreFilterStatus: framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) didn't match pod affinity rules"),
		Fn:              func(*v1.Pod, *framework.NodeInfo) *framework.Status { return nil },
	}, 0))
	d := &Decision{}
	_, err := a.schedulePod(context.Background(), framework.NewCycleState(), testPod("web", ""), d)
	want := "0/2 nodes are available: node(s) didn't match pod affinity rules."
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if len(d.Filter) != 0 || len(d.PreFilter) != 1 || d.PreFilter[0].Verdict != frameworkruntime.VerdictRejected {
		t.Errorf("filter records %d, prefilter %+v", len(d.Filter), d.PreFilter)
	}
}

func TestSchedulePodErrors(t *testing.T) {
	broken := &tp.Filter{PluginName: "Broken", Fn: func(*v1.Pod, *framework.NodeInfo) *framework.Status {
		return framework.AsStatus(errors.New("disk on fire"))
	}}
	tests := []struct {
		name    string
		nodes   []*v1.Node
		want    string
		profile framework.PluginSpec
	}{
		{name: "no nodes", want: "no nodes available to schedule pods", profile: tp.Spec(tp.Fit{}, 1)},
		{name: "a filter fails", nodes: []*v1.Node{testNode("worker-1", "4", nil)}, want: `running "Broken" filter plugin: disk on fire`, profile: tp.Spec(broken, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAlgorithm(t, cache.NewSnapshot(nil, tt.nodes), tt.profile)
			_, err := a.schedulePod(context.Background(), framework.NewCycleState(), testPod("web", ""), &Decision{})
			var fitErr *FitError
			if err == nil || err.Error() != tt.want || errors.As(err, &fitErr) {
				t.Fatalf("err = %v, want %q (not a FitError)", err, tt.want)
			}
		})
	}
}

func TestSchedulePodScoresAndRanks(t *testing.T) {
	snapshot := cache.NewSnapshot(
		[]*v1.Pod{withNodeName(testPod("busy", "3"), "worker-1")},
		[]*v1.Node{testNode("worker-1", "4", nil), testNode("worker-2", "4", nil), testNode("worker-3", "2", nil)})
	a := newAlgorithm(t, snapshot, tp.Spec(tp.Fit{}, 2))
	d := &Decision{}
	host, err := a.schedulePod(context.Background(), framework.NewCycleState(), testPod("web", "1"), d)
	if err != nil {
		t.Fatal(err)
	}
	// Free cpu after the pod: worker-1 0/4, worker-2 3/4, worker-3 1/2.
	if host != "worker-2" {
		t.Fatalf("host = %s, want worker-2", host)
	}
	var got []string
	for _, ns := range d.Scores {
		got = append(got, fmt.Sprintf("%s=%d", ns.Node, ns.TotalScore))
	}
	if want := []string{"worker-2=150", "worker-3=100", "worker-1=0"}; !cmp.Equal(got, want) {
		t.Errorf("ranking = %v, want %v", got, want)
	}
	if d.TiedNodes != 1 {
		t.Errorf("TiedNodes = %d, want 1", d.TiedNodes)
	}
}

func withNodeName(p *v1.Pod, node string) *v1.Pod {
	p.Spec.NodeName = node
	return p
}

func TestSchedulePodWithoutFilterOrScorePlugins(t *testing.T) {
	nodes := []*v1.Node{testNode("worker-1", "4", nil), testNode("worker-2", "4", nil), testNode("worker-3", "4", nil)}
	constant := &tp.Score{PluginName: "Constant", Fn: func(*framework.NodeInfo) int64 { return 10 }}
	tests := []struct {
		name          string
		profile       framework.PluginSpec
		wantFeasible  int
		wantSkipped   string
		wantTiedNodes int
	}{
		{name: "no filters: every node is feasible", profile: tp.Spec(constant, 1), wantFeasible: 3, wantTiedNodes: 3},
		{name: "no scores: the first feasible node will do", profile: tp.Spec(tp.NodeSelector{}, 0), wantFeasible: 1, wantSkipped: "only one feasible node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAlgorithm(t, cache.NewSnapshot(nil, nodes), tt.profile)
			d := &Decision{}
			if _, err := a.schedulePod(context.Background(), framework.NewCycleState(), testPod("web", ""), d); err != nil {
				t.Fatal(err)
			}
			if d.FeasibleNodes != tt.wantFeasible || d.ScoringSkipped != tt.wantSkipped || d.TiedNodes != tt.wantTiedNodes {
				t.Errorf("feasible %d, scoring skipped %q, tied %d; want %d, %q, %d",
					d.FeasibleNodes, d.ScoringSkipped, d.TiedNodes, tt.wantFeasible, tt.wantSkipped, tt.wantTiedNodes)
			}
		})
	}
}

// TestLargeClusterStopsEarlyAndRotates checks upstream's adaptive search:
// in a 200-node cluster a cycle stops after 100 feasible nodes, and the
// next cycle starts where it stopped.
func TestLargeClusterStopsEarlyAndRotates(t *testing.T) {
	var nodes []*v1.Node
	for i := range 200 {
		nodes = append(nodes, testNode(fmt.Sprintf("node-%03d", i), "4", nil))
	}
	a := newAlgorithm(t, cache.NewSnapshot(nil, nodes), tp.Spec(tp.Fit{}, 1))
	for cycle, wantStart := range []int{100, 0} {
		d := &Decision{}
		if _, err := a.schedulePod(context.Background(), framework.NewCycleState(), testPod("web", "1"), d); err != nil {
			t.Fatal(err)
		}
		if d.EvaluatedNodes != 100 || d.FeasibleNodes != 100 || len(d.Filter) != 100 {
			t.Fatalf("cycle %d: evaluated %d, feasible %d, records %d; want 100 each", cycle, d.EvaluatedNodes, d.FeasibleNodes, len(d.Filter))
		}
		if a.nextStartNodeIndex != wantStart {
			t.Fatalf("cycle %d: next start %d, want %d", cycle, a.nextStartNodeIndex, wantStart)
		}
	}
}

func TestSelectHostBreaksTiesEvenly(t *testing.T) {
	scores := []frameworkruntime.NodePluginScores{
		{Node: "a", TotalScore: 90}, {Node: "b", TotalScore: 100}, {Node: "c", TotalScore: 100},
		{Node: "d", TotalScore: 50}, {Node: "e", TotalScore: 100},
	}
	rng := rand.New(rand.NewPCG(7, 11))
	const rounds = 30000
	counts := map[string]int{}
	for range rounds {
		host, tied := selectHost(scores, rng)
		if tied != 3 {
			t.Fatalf("tied = %d, want 3", tied)
		}
		counts[host]++
	}
	if counts["a"]+counts["d"] != 0 {
		t.Fatalf("a lower-scored node won: %v", counts)
	}
	// Each of the three should win a third of the time; allow 5%.
	for _, n := range []string{"b", "c", "e"} {
		if share := float64(counts[n]) / rounds; share < 0.33-0.05 || share > 0.34+0.05 {
			t.Errorf("%s won %.3f of the ties, want about 1/3 (%v)", n, share, counts)
		}
	}
}
