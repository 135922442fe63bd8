package scheduler

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	frameworkruntime "github.com/klab-dev/klab/cluster/scheduler/framework/runtime"
)

// Results of a scheduling attempt.
const (
	// ResultScheduled: a node was chosen and the pod assumed there; the
	// binding follows (BindError says if it failed).
	ResultScheduled = "Scheduled"
	// ResultUnschedulable: no node fits; the pod waits for a cluster change.
	ResultUnschedulable = "Unschedulable"
	// ResultError: a plugin or the cache failed; the pod is retried with
	// backoff.
	ResultError = "Error"
)

// Decision records one scheduling attempt: what every plugin said about
// every node, and what came of it. It is what /debug/klab/decisions serves
// and what the klab.dev/ annotations summarise.
type Decision struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
	// Attempt counts this pod's attempts, from 1.
	Attempt int       `json:"attempt"`
	Time    time.Time `json:"time"`
	// Cycle is how long the scheduling cycle took (binding not included).
	Cycle  time.Duration `json:"cycleNs"`
	Result string        `json:"result"`
	// Node is the chosen node (Scheduled only).
	Node string `json:"node,omitempty"`
	// Message is the FailedScheduling message (Unschedulable, Error).
	Message string `json:"message,omitempty"`
	// BindError is set when the binding of a Scheduled pod failed.
	BindError string `json:"bindError,omitempty"`

	// NumNodes is the number of nodes in the snapshot; EvaluatedNodes how
	// many were filtered (fewer than NumNodes only in clusters of 100 nodes
	// or more, once enough feasible nodes were found); FeasibleNodes how
	// many passed every filter.
	NumNodes       int `json:"numNodes"`
	EvaluatedNodes int `json:"evaluatedNodes"`
	FeasibleNodes  int `json:"feasibleNodes"`

	PreFilter []frameworkruntime.PluginVerdict `json:"preFilter,omitempty"`
	// Filter lists the evaluated nodes in the order they were examined.
	Filter   []NodeFilter                     `json:"filter,omitempty"`
	PreScore []frameworkruntime.PluginVerdict `json:"preScore,omitempty"`
	// Scores is the ranking: the chosen node first, then by total score.
	Scores []frameworkruntime.NodePluginScores `json:"scores,omitempty"`
	// TiedNodes is how many nodes shared the highest total; the chosen one
	// was picked among them at random.
	TiedNodes int `json:"tiedNodes,omitempty"`
	// ScoringSkipped says why no node was scored, when none was.
	ScoringSkipped string `json:"scoringSkipped,omitempty"`
}

// NodeFilter is what each filter plugin said about one node.
type NodeFilter struct {
	Node     string                           `json:"node"`
	Feasible bool                             `json:"feasible"`
	Plugins  []frameworkruntime.PluginVerdict `json:"plugins"`
}

// Pod returns the decision's pod as namespace/name.
func (d *Decision) Pod() string { return d.Namespace + "/" + d.Name }

// DefaultDecisionHistory is how many decisions are kept by default.
const DefaultDecisionHistory = 200

// decisionRing keeps the latest decisions.
type decisionRing struct {
	mu    sync.Mutex
	items []*Decision
	next  int
	full  bool
}

func newDecisionRing(n int) *decisionRing {
	if n <= 0 {
		n = DefaultDecisionHistory
	}
	return &decisionRing{items: make([]*Decision, n)}
}

func (r *decisionRing) add(d *Decision) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items[r.next] = d
	r.next = (r.next + 1) % len(r.items)
	if r.next == 0 {
		r.full = true
	}
}

// setBindError records a failed binding on a decision still in the ring.
func (r *decisionRing) setBindError(d *Decision, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d.BindError = msg
}

// list returns copies of the decisions about the pod (any pod when both
// are empty; any name in namespace when only name is empty), oldest first.
func (r *decisionRing) list(namespace, name string) []Decision {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, start := r.next, 0
	if r.full {
		n, start = len(r.items), r.next
	}
	out := []Decision{}
	for i := 0; i < n; i++ {
		d := r.items[(start+i)%len(r.items)]
		if (namespace == "" || d.Namespace == namespace) && (name == "" || d.Name == name) {
			out = append(out, *d)
		}
	}
	return out
}
