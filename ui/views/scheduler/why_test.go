package scheduler

import (
	"reflect"
	"testing"

	"github.com/klab-dev/klab/assets/i18n"
	sched "github.com/klab-dev/klab/cluster/scheduler"
	"github.com/klab-dev/klab/cluster/scheduler/plugins/interpodaffinity"
	"github.com/klab-dev/klab/cluster/scheduler/plugins/nodeaffinity"
	"github.com/klab-dev/klab/cluster/scheduler/plugins/nodename"
	"github.com/klab-dev/klab/cluster/scheduler/plugins/nodeports"
	"github.com/klab-dev/klab/cluster/scheduler/plugins/nodeunschedulable"
	"github.com/klab-dev/klab/cluster/scheduler/plugins/podtopologyspread"
	"github.com/klab-dev/klab/cluster/scheduler/plugins/tainttoleration"
	"github.com/klab-dev/klab/ui/internal/uitest"
)

func TestParseFitMessage(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		want fitMessage
		ok   bool
	}{
		{"counted reasons", "0/6 nodes are available: 3 Insufficient cpu, 3 node(s) had untolerated taint(s).",
			fitMessage{Nodes: 6, Reasons: []countedReason{{3, "Insufficient cpu"}, {3, "node(s) had untolerated taint(s)"}}}, true},
		{"one node, two reasons", "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory.",
			fitMessage{Nodes: 1, Reasons: []countedReason{{1, "Insufficient cpu"}, {1, "Insufficient memory"}}}, true},
		{"a reason holding a comma", "0/2 nodes are available: 2 parsing pod: bad selector, want key=value.",
			fitMessage{Nodes: 2, Reasons: []countedReason{{2, "parsing pod: bad selector, want key=value"}}}, true},
		{"prefilter", "0/3 nodes are available: node(s) didn't match pod topology spread constraints (missing required label).",
			fitMessage{Nodes: 3, PreFilter: "node(s) didn't match pod topology spread constraints (missing required label)"}, true},
		{"sorted as strings", "0/12 nodes are available: 10 Insufficient cpu, 2 node(s) were unschedulable.",
			fitMessage{Nodes: 12, Reasons: []countedReason{{10, "Insufficient cpu"}, {2, "node(s) were unschedulable"}}}, true},
		{"with preemption's part", "0/6 nodes are available: 3 Insufficient cpu, 3 node(s) had untolerated taint(s). preemption: 0/6 nodes are available: 3 No preemption victims found for incoming pod, 3 Preemption is not helpful for scheduling.",
			fitMessage{Nodes: 6, Reasons: []countedReason{{3, "Insufficient cpu"}, {3, "node(s) had untolerated taint(s)"}},
				Preemption: "preemption: 0/6 nodes are available: 3 No preemption victims found for incoming pod, 3 Preemption is not helpful for scheduling."}, true},
		{"prefilter then preemption", "0/3 nodes are available: node(s) didn't match pod topology spread constraints (missing required label). preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
			fitMessage{Nodes: 3, PreFilter: "node(s) didn't match pod topology spread constraints (missing required label)",
				Preemption: "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."}, true},
		{"a plugin error", `running "NodeResourcesFit" filter plugin: boom`, fitMessage{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseFitMessage(tt.msg)
			if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseFitMessage(%q) = %+v, %v; want %+v, %v", tt.msg, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestEveryPluginReasonExplained keeps the explanations in step with the
// reasons the scheduler's plugins really give, in both languages.
func TestEveryPluginReasonExplained(t *testing.T) {
	reasons := []string{
		"Insufficient cpu", "Insufficient memory", "Insufficient ephemeral-storage", "Insufficient example.com/gpu", "Too many pods",
		tainttoleration.ErrReasonNotMatch, nodeaffinity.ErrReasonPod, nodename.ErrReason,
		nodeunschedulable.ErrReasonUnschedulable, nodeunschedulable.ErrReasonUnknownCondition, nodeports.ErrReason,
		podtopologyspread.ErrReasonConstraintsNotMatch, podtopologyspread.ErrReasonNodeLabelNotMatch,
		interpodaffinity.ErrReasonAffinityRulesNotMatch, interpodaffinity.ErrReasonAntiAffinityRulesNotMatch,
		interpodaffinity.ErrReasonExistingAntiAffinityRulesNotMatch,
	}
	for _, lang := range i18n.Langs {
		uitest.Setup(t, lang)
		seen := map[string]string{}
		for _, r := range reasons {
			text, ok := explainReason(2, r)
			if !ok {
				t.Errorf("%s: no explanation for %q", lang, r)
				continue
			}
			if other, dup := seen[text]; dup && r != other {
				t.Errorf("%s: %q and %q share an explanation", lang, r, other)
			}
			seen[text] = r
		}
	}
	for _, k := range knownReasons {
		for _, lang := range i18n.Langs {
			if !lang.Has(k.key) {
				t.Errorf("%s lacks %s", lang, k.key)
			}
		}
	}
}

func TestWhyLines(t *testing.T) {
	uitest.Setup(t, i18n.English)
	tests := []struct {
		name, result, msg string
		want              []string // the upstream parts
	}{
		{"unschedulable", sched.ResultUnschedulable, "0/6 nodes are available: 3 Insufficient cpu, 3 node(s) had untolerated taint(s).",
			[]string{"3 Insufficient cpu", "3 node(s) had untolerated taint(s)"}},
		{"with preemption", sched.ResultUnschedulable, "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.",
			[]string{"1 Insufficient cpu", "preemption: not eligible due to preemptionPolicy=Never."}},
		{"no nodes", sched.ResultUnschedulable, "no nodes available to schedule pods", []string{"no nodes available to schedule pods"}},
		{"error", sched.ResultError, "running PreFilter plugin \"X\": boom", []string{"running PreFilter plugin \"X\": boom"}},
		{"unknown reason", sched.ResultUnschedulable, "0/2 nodes are available: 2 node(s) had volume node affinity conflict.",
			[]string{"2 node(s) had volume node affinity conflict"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := whyLines(tt.result, tt.msg)
			var parts []string
			for _, w := range got {
				parts = append(parts, w.Upstream)
				if w.Text == "" {
					t.Errorf("%q has no explanation", w.Upstream)
				}
			}
			if !reflect.DeepEqual(parts, tt.want) {
				t.Errorf("parts %q, want %q", parts, tt.want)
			}
		})
	}
}
