package runtime

import "github.com/klab-dev/klab/cluster/scheduler/framework"

// What a plugin said at one extension point, as a decision record shows it.
const (
	// VerdictPassed: the plugin accepted the pod (or the node).
	VerdictPassed = "passed"
	// VerdictSkipped: the plugin's PreFilter or PreScore returned Skip, so
	// its Filter or Score did not run.
	VerdictSkipped = "skipped"
	// VerdictRejected: Unschedulable or UnschedulableAndUnresolvable.
	VerdictRejected = "rejected"
	// VerdictError: the plugin failed; the pod is retried with backoff.
	VerdictError = "error"
	// VerdictNotEvaluated: an earlier plugin already rejected the node, so
	// this one was not asked (upstream stops at the first rejection).
	VerdictNotEvaluated = "not-evaluated"
)

// PluginVerdict is one plugin's answer at one extension point (for one node,
// at Filter).
type PluginVerdict struct {
	Plugin  string `json:"plugin"`
	Verdict string `json:"verdict"`
	// Code is the status code's upstream name, for rejected and error.
	Code    string   `json:"code,omitempty"`
	Reasons []string `json:"reasons,omitempty"`
}

// verdictOf turns a plugin's status into a verdict.
func verdictOf(plugin string, s *framework.Status) PluginVerdict {
	v := PluginVerdict{Plugin: plugin}
	switch {
	case s.IsSuccess():
		v.Verdict = VerdictPassed
	case s.IsSkip():
		v.Verdict = VerdictSkipped
	case s.IsRejected():
		v.Verdict, v.Code, v.Reasons = VerdictRejected, s.Code().String(), s.Reasons()
	default:
		v.Verdict, v.Code, v.Reasons = VerdictError, s.Code().String(), s.Reasons()
	}
	return v
}

// PluginScore is one score plugin's score for one node: the raw score, the
// score after NormalizeScore (the raw score for plugins without
// ScoreExtensions), the plugin's weight and the weighted score that counts
// towards the node's total.
type PluginScore struct {
	Plugin     string `json:"plugin"`
	Raw        int64  `json:"raw"`
	Normalized int64  `json:"normalized"`
	Weight     int64  `json:"weight"`
	Weighted   int64  `json:"weighted"`
}

// NodePluginScores is a node's scores from every score plugin that ran, and
// their sum.
type NodePluginScores struct {
	Node       string        `json:"node"`
	Scores     []PluginScore `json:"scores"`
	TotalScore int64         `json:"total"`
}
