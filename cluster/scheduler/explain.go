package scheduler

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	frameworkruntime "github.com/klab-dev/klab/cluster/scheduler/framework/runtime"
)

// The annotations the scheduler writes on a pod to say why it landed where
// it did, readable with kubectl get pod -o yaml. They are klab's own;
// upstream writes none.
const (
	// AnnotationScheduledNode is the node the pod was bound to.
	AnnotationScheduledNode = "klab.dev/scheduled-node"
	// AnnotationFilter has one line per node: "passed", or the filter
	// plugin that rejected the node and its reasons.
	AnnotationFilter = "klab.dev/filter"
	// AnnotationScore has one line per scored node, best first: the total
	// and each plugin's normalised score times its weight.
	AnnotationScore = "klab.dev/score"
)

// maxExplainedNodes caps the lines of each annotation so that a pod in a
// large cluster stays small; the full record is at /debug/klab/decisions.
const maxExplainedNodes = 20

// maxLineLength caps one line (a plugin may give long reasons).
const maxLineLength = 400

// explain returns the annotations for a decision. A value of nil means the
// annotation is to be removed (a JSON merge patch null): an unschedulable
// pod has no node and no scores.
func explain(d *Decision) map[string]*string {
	filter := explainFilter(d)
	out := map[string]*string{AnnotationFilter: &filter}
	if d.Result == ResultScheduled {
		node, score := d.Node, explainScore(d)
		out[AnnotationScheduledNode] = &node
		out[AnnotationScore] = &score
	} else {
		out[AnnotationScheduledNode] = nil
		out[AnnotationScore] = nil
	}
	return out
}

// explainFilter has one line per evaluated node, by node name (so that the
// text does not change between attempts that see the same cluster).
func explainFilter(d *Decision) string {
	if d.NumNodes == 0 {
		return "no nodes"
	}
	var lines []string
	if msg, plugin := preFilterRejection(d); msg != "" {
		lines = append(lines, clip(fmt.Sprintf("all nodes: %s: %s (PreFilter)", plugin, msg)))
	}
	nodes := append([]NodeFilter(nil), d.Filter...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Node < nodes[j].Node })
	for i, nf := range nodes {
		if i == maxExplainedNodes {
			lines = append(lines, fmt.Sprintf("... and %d more nodes (see /debug/klab/decisions)", len(nodes)-i))
			break
		}
		lines = append(lines, clip(nf.Node+": "+filterVerdict(nf)))
	}
	if n := d.NumNodes - d.EvaluatedNodes; n > 0 && len(d.Filter) > 0 {
		lines = append(lines, fmt.Sprintf("%d more nodes not evaluated: enough feasible nodes were found", n))
	}
	return strings.Join(lines, "\n")
}

func preFilterRejection(d *Decision) (msg, plugin string) {
	for _, v := range d.PreFilter {
		if v.Verdict == frameworkruntime.VerdictRejected || v.Verdict == frameworkruntime.VerdictError {
			return strings.Join(v.Reasons, ", "), v.Plugin
		}
	}
	return "", ""
}

// filterVerdict is "passed", or "Plugin: reasons" for the plugin that
// rejected the node.
func filterVerdict(nf NodeFilter) string {
	if nf.Feasible {
		return "passed"
	}
	for _, v := range nf.Plugins {
		switch v.Verdict {
		case frameworkruntime.VerdictRejected:
			return v.Plugin + ": " + strings.Join(v.Reasons, ", ")
		case frameworkruntime.VerdictError:
			return v.Plugin + ": error: " + strings.Join(v.Reasons, ", ")
		}
	}
	return "rejected"
}

// explainScore has one line per scored node in ranking order:
// "worker-2 (chosen): total 187 = NodeResourcesFit 77×1 + ...".
func explainScore(d *Decision) string {
	if d.ScoringSkipped != "" {
		return "not scored: " + d.ScoringSkipped
	}
	var lines []string
	for i, ns := range d.Scores {
		if i == maxExplainedNodes {
			lines = append(lines, fmt.Sprintf("... and %d more nodes (see /debug/klab/decisions)", len(d.Scores)-i))
			break
		}
		name := ns.Node
		if ns.Node == d.Node {
			name += " (chosen)"
			if d.TiedNodes > 1 {
				name = fmt.Sprintf("%s (chosen at random among %d tied)", ns.Node, d.TiedNodes)
			}
		}
		terms := make([]string, len(ns.Scores))
		for j, ps := range ns.Scores {
			terms[j] = fmt.Sprintf("%s %d×%d", ps.Plugin, ps.Normalized, ps.Weight)
		}
		line := fmt.Sprintf("%s: total %d", name, ns.TotalScore)
		if len(terms) > 0 {
			line += " = " + strings.Join(terms, " + ")
		}
		lines = append(lines, clip(line))
	}
	return strings.Join(lines, "\n")
}

// clip shortens a line to maxLineLength bytes, cutting at a rune boundary.
func clip(line string) string {
	if len(line) <= maxLineLength {
		return line
	}
	cut := maxLineLength - len(" ...")
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return line[:cut] + " ..."
}
