package scheduler

import (
	"time"

	"github.com/klab-dev/klab/cluster/internal/eventstream"
)

// Kinds of events on /debug/klab/events.
const (
	// EventDecision: a scheduling attempt ended (Decision is set).
	EventDecision = "decision"
	// EventBind: a binding finished (Pod, Node, and Error if it failed).
	EventBind = "bind"
	// EventLeader: the leader changed, or this scheduler started or
	// stopped leading (Holder, IsLeader).
	EventLeader = "leader"
)

// Event is one thing the scheduler did, as the event stream carries it.
// Readers outside cluster/ build events by hand, so it keeps Seq and Time
// itself rather than embedding eventstream.Header, which they cannot name.
type Event struct {
	Seq      uint64    `json:"seq"`
	Time     time.Time `json:"time"`
	Kind     string    `json:"kind"`
	Decision *Decision `json:"decision,omitempty"`
	Pod      string    `json:"pod,omitempty"`
	Node     string    `json:"node,omitempty"`
	Error    string    `json:"error,omitempty"`
	Holder   string    `json:"holder,omitempty"`
	IsLeader bool      `json:"isLeader,omitempty"`
}

// eventRingSize is how many events a new subscriber can replay.
const eventRingSize = 256

// newEventHub returns the hub of the scheduler's events: numbered from 1,
// and timed as they are published unless they carry a time.
func newEventHub() *eventstream.Hub[Event] {
	return eventstream.NewHub(eventRingSize, func(e *Event, seq uint64, now time.Time) {
		e.Seq = seq
		if e.Time.IsZero() {
			e.Time = now
		}
	})
}
