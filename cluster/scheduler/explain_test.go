package scheduler

import (
	"fmt"
	"strings"
	"testing"

	frameworkruntime "github.com/klab-dev/klab/cluster/scheduler/framework/runtime"
)

func passed(plugins ...string) []frameworkruntime.PluginVerdict {
	var out []frameworkruntime.PluginVerdict
	for _, p := range plugins {
		out = append(out, frameworkruntime.PluginVerdict{Plugin: p, Verdict: frameworkruntime.VerdictPassed})
	}
	return out
}

func scored(node string, terms ...frameworkruntime.PluginScore) frameworkruntime.NodePluginScores {
	ns := frameworkruntime.NodePluginScores{Node: node, Scores: terms}
	for _, t := range terms {
		ns.TotalScore += t.Weighted
	}
	return ns
}

func term(plugin string, normalized, weight int64) frameworkruntime.PluginScore {
	return frameworkruntime.PluginScore{Plugin: plugin, Normalized: normalized, Weight: weight, Weighted: normalized * weight}
}

func TestExplain(t *testing.T) {
	rejectedCPU := append(passed("NodeUnschedulable"),
		frameworkruntime.PluginVerdict{Plugin: "NodeResourcesFit", Verdict: "rejected", Code: "Unschedulable", Reasons: []string{"Insufficient cpu"}},
		frameworkruntime.PluginVerdict{Plugin: "TaintToleration", Verdict: "not-evaluated"})
	str := func(s string) *string { return &s }
	tests := []struct {
		name string
		d    *Decision
		want map[string]*string
	}{
		{
			name: "scheduled",
			d: &Decision{
				Result: ResultScheduled, Node: "worker-2", NumNodes: 3, EvaluatedNodes: 3,
				// Filter records come in examination order; the
				// annotation sorts them by name.
				Filter: []NodeFilter{
					{Node: "worker-3", Feasible: true, Plugins: passed("NodeUnschedulable", "NodeResourcesFit", "TaintToleration")},
					{Node: "worker-1", Plugins: rejectedCPU},
					{Node: "worker-2", Feasible: true, Plugins: passed("NodeUnschedulable", "NodeResourcesFit", "TaintToleration")},
				},
				Scores: []frameworkruntime.NodePluginScores{
					scored("worker-2", term("NodeResourcesFit", 77, 1), term("ImageLocality", 10, 1), term("TaintToleration", 100, 3)),
					scored("worker-3", term("NodeResourcesFit", 60, 1), term("ImageLocality", 0, 1), term("TaintToleration", 100, 3)),
				},
				TiedNodes: 1,
			},
			want: map[string]*string{
				AnnotationScheduledNode: str("worker-2"),
				AnnotationFilter:        str("worker-1: NodeResourcesFit: Insufficient cpu\nworker-2: passed\nworker-3: passed"),
				AnnotationScore: str("worker-2 (chosen): total 387 = NodeResourcesFit 77×1 + ImageLocality 10×1 + TaintToleration 100×3\n" +
					"worker-3: total 360 = NodeResourcesFit 60×1 + ImageLocality 0×1 + TaintToleration 100×3"),
			},
		},
		{
			name: "scheduled among ties",
			d: &Decision{
				Result: ResultScheduled, Node: "worker-3", NumNodes: 2, EvaluatedNodes: 2, TiedNodes: 2,
				Filter: []NodeFilter{{Node: "worker-2", Feasible: true}, {Node: "worker-3", Feasible: true}},
				Scores: []frameworkruntime.NodePluginScores{
					scored("worker-3", term("NodeResourcesFit", 50, 1)), scored("worker-2", term("NodeResourcesFit", 50, 1)),
				},
			},
			want: map[string]*string{
				AnnotationScheduledNode: str("worker-3"),
				AnnotationFilter:        str("worker-2: passed\nworker-3: passed"),
				AnnotationScore: str("worker-3 (chosen at random among 2 tied): total 50 = NodeResourcesFit 50×1\n" +
					"worker-2: total 50 = NodeResourcesFit 50×1"),
			},
		},
		{
			name: "single candidate is not scored",
			d: &Decision{
				Result: ResultScheduled, Node: "worker-2", NumNodes: 2, EvaluatedNodes: 2, ScoringSkipped: "only one feasible node",
				Filter: []NodeFilter{{Node: "worker-1", Plugins: rejectedCPU}, {Node: "worker-2", Feasible: true}},
			},
			want: map[string]*string{
				AnnotationScheduledNode: str("worker-2"),
				AnnotationFilter:        str("worker-1: NodeResourcesFit: Insufficient cpu\nworker-2: passed"),
				AnnotationScore:         str("not scored: only one feasible node"),
			},
		},
		{
			name: "unschedulable removes node and score",
			d: &Decision{
				Result: ResultUnschedulable, NumNodes: 1, EvaluatedNodes: 1,
				Filter: []NodeFilter{{Node: "worker-1", Plugins: rejectedCPU}},
			},
			want: map[string]*string{
				AnnotationScheduledNode: nil,
				AnnotationFilter:        str("worker-1: NodeResourcesFit: Insufficient cpu"),
				AnnotationScore:         nil,
			},
		},
		{
			name: "rejected at PreFilter",
			d: &Decision{
				Result: ResultUnschedulable, NumNodes: 3,
				PreFilter: []frameworkruntime.PluginVerdict{{Plugin: "InterPodAffinity", Verdict: "rejected", Code: "UnschedulableAndUnresolvable",
					Reasons: []string{"node(s) didn't match pod affinity rules"}}},
			},
			want: map[string]*string{
				AnnotationScheduledNode: nil,
				AnnotationFilter:        str("all nodes: InterPodAffinity: node(s) didn't match pod affinity rules (PreFilter)"),
				AnnotationScore:         nil,
			},
		},
		{
			name: "no nodes",
			d:    &Decision{Result: ResultUnschedulable},
			want: map[string]*string{
				AnnotationScheduledNode: nil,
				AnnotationFilter:        str("no nodes"),
				AnnotationScore:         nil,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := explain(tt.d)
			if len(got) != len(tt.want) {
				t.Fatalf("annotations %v, want keys %v", got, tt.want)
			}
			for k, want := range tt.want {
				g, ok := got[k]
				switch {
				case !ok:
					t.Errorf("%s missing", k)
				case (g == nil) != (want == nil):
					t.Errorf("%s = %v, want %v", k, g, want)
				case g != nil && *g != *want:
					t.Errorf("%s =\n%s\nwant\n%s", k, *g, *want)
				}
			}
		})
	}
}

func TestExplainIsBounded(t *testing.T) {
	d := &Decision{Result: ResultUnschedulable, NumNodes: 500, EvaluatedNodes: 500}
	long := strings.Repeat("node(s) had untolerated taint {very-long-key: value} ", 20)
	for i := range 500 {
		d.Filter = append(d.Filter, NodeFilter{Node: fmt.Sprintf("node-%03d", i), Plugins: []frameworkruntime.PluginVerdict{
			{Plugin: "TaintToleration", Verdict: "rejected", Code: "UnschedulableAndUnresolvable", Reasons: []string{long}},
		}})
	}
	filter := *explain(d)[AnnotationFilter]
	lines := strings.Split(filter, "\n")
	if len(lines) != maxExplainedNodes+1 {
		t.Fatalf("%d lines, want %d", len(lines), maxExplainedNodes+1)
	}
	if last := lines[len(lines)-1]; last != "... and 480 more nodes (see /debug/klab/decisions)" {
		t.Errorf("last line %q", last)
	}
	for _, l := range lines {
		if len(l) > maxLineLength {
			t.Fatalf("line of %d bytes: %q", len(l), l)
		}
	}
}
