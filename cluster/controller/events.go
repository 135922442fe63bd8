package controller

import (
	"time"

	"github.com/klab-dev/klab/cluster/controller/nodelifecycle"
	"github.com/klab-dev/klab/cluster/internal/eventstream"
)

// Event kinds of the manager itself on /debug/klab/events. Node lifecycle
// transitions use nodelifecycle's kinds (NodeReady, TaintAdded,
// TaintRemoved, PodNotReady, ZoneState, EvictionScheduled,
// EvictionCancelled, PodEvicted).
const (
	// EventLeader: this manager saw a new lease holder (Leader).
	EventLeader = "leader"
	// EventStartedLeading and EventStoppedLeading: this manager became the
	// leader and started its controllers, or stopped leading.
	EventStartedLeading = "started-leading"
	EventStoppedLeading = "stopped-leading"
)

// Event is one thing a manager reports on /debug/klab/events.
type Event struct {
	eventstream.Header
	// Identity is the reporting manager's lease identity.
	Identity string `json:"identity"`
	Kind     string `json:"kind"`
	Leader   string `json:"leader,omitempty"`
	Node     string `json:"node,omitempty"`
	Pod      string `json:"pod,omitempty"`
	Taint    string `json:"taint,omitempty"`
	Zone     string `json:"zone,omitempty"`
	From     string `json:"from,omitempty"`
	To       string `json:"to,omitempty"`
	// At is when a scheduled eviction is due.
	At     *time.Time `json:"at,omitempty"`
	Detail string     `json:"detail,omitempty"`
}

// eventFromTransition turns a node lifecycle transition into an Event.
func eventFromTransition(t nodelifecycle.Transition) Event {
	e := Event{Kind: t.Kind, Node: t.Node, Pod: t.Pod, Taint: t.Taint, Zone: t.Zone, From: t.From, To: t.To}
	if !t.At.IsZero() {
		at := t.At
		e.At = &at
	}
	return e
}

// eventRingSize is how many events a manager keeps for readers that
// connect late.
const eventRingSize = 1024
