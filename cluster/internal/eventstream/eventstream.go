// Package eventstream writes the components' /debug/klab/events streams:
// newline-delimited JSON over a long-lived HTTP response, flushed in
// batches rather than one write per event.
//
// How long an event may wait before it is flushed is the stream's hold:
// ?quiet=D on the request (0 to MaxQuiet), or the component's default.
// Routine events (a steady cluster's traffic) wait until the next multiple
// of the hold since the zero time, so that every stream with the same hold
// flushes at the same instants and a reader of several wakes once for all
// of them. News waits at most NewsWait, and takes what waits with it out.
// A hold of 0 flushes every event at once. The flush timer runs only while
// something waits: an idle stream wakes nobody.
//
// What waits is kept as sent and encoded when flushed, so that a stream
// with a Fold can write a batch shorter than what was sent: several
// heartbeats as the last of them, saying how many it stands for.
package eventstream

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

const (
	// NewsWait is how long news waits at most before it is flushed.
	NewsWait = 50 * time.Millisecond
	// MaxQuiet bounds ?quiet=.
	MaxQuiet = 2 * time.Second
)

// Stream is one reader's stream. Use it from one goroutine: Send events,
// and Flush when Due fires.
type Stream struct {
	w       http.ResponseWriter
	flusher http.Flusher
	enc     *json.Encoder
	hold    time.Duration
	timer   *time.Timer
	due     time.Time // when what waits is flushed; zero if nothing waits
	waiting []any
	fold    func([]any) []any
}

// Fold has f rewrite each batch before it is written: it returns the
// values to write, in order, and may reuse or append to the slice it is
// given. It applies only to a stream with a hold (without one, nothing is
// batched), and only to a batch of at least one value.
func (s *Stream) Fold(f func([]any) []any) { s.fold = f }

// Start begins a stream on w, its hold read from r's ?quiet= or, without
// one, def. A malformed or out-of-range ?quiet= is answered with 400 Bad
// Request, and Start returns the error.
func Start(w http.ResponseWriter, r *http.Request, def time.Duration) (*Stream, error) {
	hold := def
	if v := r.URL.Query().Get("quiet"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > MaxQuiet {
			err := fmt.Errorf("quiet=%q: want a duration from 0 to %v", v, MaxQuiet)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return nil, err
		}
		hold = d
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-cache")
	t := time.NewTimer(time.Hour)
	t.Stop()
	f, _ := w.(http.Flusher)
	return &Stream{w: w, flusher: f, enc: json.NewEncoder(w), hold: hold, timer: t}, nil
}

// Send writes v and sees that it is flushed in time: news within NewsWait,
// routine events on the next multiple of the hold.
func (s *Stream) Send(v any, news bool) error {
	if s.hold == 0 {
		if err := s.enc.Encode(v); err != nil {
			return err
		}
		return s.Flush()
	}
	s.waiting = append(s.waiting, v)
	now := time.Now()
	at := now.Add(min(s.hold, NewsWait))
	if !news {
		at = now.Truncate(s.hold).Add(s.hold)
	}
	if s.due.IsZero() || at.Before(s.due) {
		s.due = at
		s.timer.Reset(at.Sub(now))
	}
	return nil
}

// Due fires when what waits should be flushed.
func (s *Stream) Due() <-chan time.Time { return s.timer.C }

// Flush writes and sends what waits. An error is the reader's connection
// failing: the stream is over.
func (s *Stream) Flush() error {
	s.due = time.Time{}
	s.timer.Stop()
	batch := s.waiting
	if s.fold != nil && len(batch) > 0 {
		batch = s.fold(batch)
	}
	for _, v := range batch {
		if err := s.enc.Encode(v); err != nil {
			return err
		}
	}
	clear(s.waiting)
	s.waiting = s.waiting[:0]
	if s.flusher != nil {
		s.flusher.Flush()
	}
	return nil
}

// Close stops the flush timer.
func (s *Stream) Close() { s.timer.Stop() }
