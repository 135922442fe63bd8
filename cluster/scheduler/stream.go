package scheduler

import (
	"sync"
	"time"
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

// eventHub keeps the latest events and fans them out to subscribers. A
// subscriber that cannot keep up loses events (a gap in Seq tells it)
// rather than slowing scheduling down.
type eventHub struct {
	mu   sync.Mutex
	seq  uint64
	ring []Event
	next int
	full bool
	subs map[chan Event]struct{}
}

func newEventHub() *eventHub {
	return &eventHub{ring: make([]Event, eventRingSize), subs: map[chan Event]struct{}{}}
}

func (h *eventHub) publish(e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	e.Seq = h.seq
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	h.ring[h.next] = e
	h.next = (h.next + 1) % len(h.ring)
	if h.next == 0 {
		h.full = true
	}
	for c := range h.subs {
		select {
		case c <- e:
		default:
		}
	}
}

// subscribe returns the retained events after seq and a channel of the
// ones that follow; cancel must be called when done.
func (h *eventHub) subscribe(since uint64) (past []Event, c <-chan Event, cancel func()) {
	ch := make(chan Event, 1024)
	h.mu.Lock()
	n, start := h.next, 0
	if h.full {
		n, start = len(h.ring), h.next
	}
	for i := 0; i < n; i++ {
		if e := h.ring[(start+i)%len(h.ring)]; e.Seq > since {
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
