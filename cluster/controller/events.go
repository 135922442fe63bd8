package controller

import (
	"sync"
	"time"

	"github.com/klab-dev/klab/cluster/controller/nodelifecycle"
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
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
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

// eventHub keeps the latest events and fans them out to subscribers. A
// subscriber that cannot keep up loses events (it sees a gap in Seq)
// rather than slowing the controllers down.
type eventHub struct {
	mu   sync.Mutex
	seq  uint64
	ring []Event
	subs map[chan Event]struct{}
}

func newEventHub() *eventHub {
	return &eventHub{subs: map[chan Event]struct{}{}}
}

func (h *eventHub) publish(e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	e.Seq = h.seq
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	if len(h.ring) == eventRingSize {
		copy(h.ring, h.ring[1:])
		h.ring = h.ring[:eventRingSize-1]
	}
	h.ring = append(h.ring, e)
	for c := range h.subs {
		select {
		case c <- e:
		default:
		}
	}
}

// subscribe returns the kept events after seq and a channel of the ones
// that follow; cancel must be called when done.
func (h *eventHub) subscribe(since uint64) (past []Event, c <-chan Event, cancel func()) {
	ch := make(chan Event, 256)
	h.mu.Lock()
	for _, e := range h.ring {
		if e.Seq > since {
			past = append(past, e)
		}
	}
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	return past, ch, func() {
		h.mu.Lock()
		delete(h.subs, ch)
		h.mu.Unlock()
	}
}
