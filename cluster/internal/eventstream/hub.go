package eventstream

import (
	"sync"
	"time"
)

// subscriberBuffer is how many events wait for one slow subscriber before
// the hub drops what follows for it.
const subscriberBuffer = 1024

// Header is what a numbered event carries first: its sequence number on
// the stream (from 1, in the order the component published its events)
// and when it happened. An event type embeds it, and hands Stamp to
// NewHub, so that its JSON starts with "seq" and "time" as every
// component's stream does. An event type that readers outside cluster/
// build by hand (etcd's, the scheduler's) keeps the two fields itself
// instead, since they cannot name this type, and hands NewHub a stamp of
// its own.
type Header struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
}

// Stamp numbers an event as a Hub publishes it, and gives it the time now
// unless it already has one.
func (h *Header) Stamp(seq uint64, now time.Time) {
	h.Seq = seq
	if h.Time.IsZero() {
		h.Time = now
	}
}

// Hub keeps a component's latest events in a ring and fans each new one
// out to its subscribers (the readers of its stream). A subscriber that
// cannot keep up loses events rather than slowing the component down; on
// a numbered stream, a gap in Seq tells it how many.
type Hub[E any] struct {
	stamp func(e *E, seq uint64, now time.Time)

	mu   sync.Mutex
	seq  uint64
	ring []entry[E] // the last len(ring) events, oldest at next once full
	next int
	full bool
	subs map[chan E]struct{}
}

// entry is an event in the ring with its number, which an unnumbered
// event does not carry.
type entry[E any] struct {
	seq   uint64
	event E
}

// NewHub returns a hub that keeps the last retain events. stamp, if not
// nil, numbers each event as it is published (Header.Stamp, for an event
// that embeds a Header); without it the stream is unnumbered and ?since=
// replays everything the hub keeps.
func NewHub[E any](retain int, stamp func(e *E, seq uint64, now time.Time)) *Hub[E] {
	return &Hub[E]{stamp: stamp, ring: make([]entry[E], retain), subs: map[chan E]struct{}{}}
}

// Publish numbers e (for a numbered hub), keeps it and hands it to every
// subscriber that has room for it.
func (h *Hub[E]) Publish(e E) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	if h.stamp != nil {
		h.stamp(&e, h.seq, time.Now())
	}
	h.ring[h.next] = entry[E]{seq: h.seq, event: e}
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

// Subscribe returns the kept events after sequence number since, oldest
// first, and a channel of the events that follow; cancel must be called
// when done. An unnumbered hub replays every event it keeps, whatever
// since says.
func (h *Hub[E]) Subscribe(since uint64) (past []E, events <-chan E, cancel func()) {
	if h.stamp == nil {
		since = 0
	}
	ch := make(chan E, subscriberBuffer)
	h.mu.Lock()
	n, start := h.next, 0
	if h.full {
		n, start = len(h.ring), h.next
	}
	for i := range n {
		if e := h.ring[(start+i)%len(h.ring)]; e.seq > since {
			past = append(past, e.event)
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
