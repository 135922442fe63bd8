package proxy

import (
	"sync"
	"time"
)

// Kinds of events on /debug/klab/events.
const (
	// EventSync: a sync ran (Mode, Duration, Rules).
	EventSync = "sync"
	// EventModeChanged: the mode (or the ipvs scheduler) was switched
	// (From, To, and the new mode's first sync's Duration and Rules).
	EventModeChanged = "mode-changed"
	// EventConfigError: the ConfigMap holds a configuration kube-proxy
	// cannot use; Mode is the one that keeps running.
	EventConfigError = "config-error"
	// EventNodePortError: a NodePort could not be opened (NodePort).
	EventNodePortError = "nodeport-error"
)

// Event is one thing the proxy did, as the event stream carries it.
type Event struct {
	Seq      uint64        `json:"seq"`
	Time     time.Time     `json:"time"`
	Kind     string        `json:"kind"`
	Mode     string        `json:"mode,omitempty"`
	From     string        `json:"from,omitempty"`
	To       string        `json:"to,omitempty"`
	Duration time.Duration `json:"durationNs"`
	Rules    int           `json:"rules"`
	NodePort int           `json:"nodePort,omitempty"`
	Message  string        `json:"message,omitempty"`
}

// eventRingSize is how many events a new subscriber can replay.
const eventRingSize = 256

// eventHub keeps the latest events and fans them out to subscribers. A
// subscriber that cannot keep up loses events (a gap in Seq tells it)
// rather than holding up a sync.
type eventHub struct {
	mu   sync.Mutex
	seq  uint64
	ring []Event // the last len(ring) events, oldest at next once full
	next int
	full bool
	subs map[chan Event]struct{}
}

func newEventHub() *eventHub {
	return &eventHub{ring: make([]Event, eventRingSize), subs: make(map[chan Event]struct{})}
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

// subscribe returns the retained events after seq, oldest first, and a
// channel of the ones that follow; cancel must be called when done.
func (h *eventHub) subscribe(since uint64) (past []Event, c <-chan Event, cancel func()) {
	ch := make(chan Event, 1024)
	h.mu.Lock()
	n, start := h.next, 0
	if h.full {
		n, start = len(h.ring), h.next
	}
	for i := range n {
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
