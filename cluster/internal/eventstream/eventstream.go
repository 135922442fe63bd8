// Package eventstream is every klab component's /debug/klab/events: the
// Hub a component publishes its events to, and the stream each reader
// gets, newline-delimited JSON over a long-lived HTTP response.
//
// A stream takes the same parameters on every component, the ones any
// client of an event stream may want:
//
//   - ?since=N replays the kept events after sequence number N first (0,
//     the default, replays all the hub keeps; a number past the last one
//     replays nothing). An unnumbered stream replays everything.
//   - ?quiet=D is the stream's flush interval for routine traffic (0 to
//     MaxQuiet; without it, the component's default). Events are written
//     in batches: a routine event (a steady cluster's traffic, as the
//     component sorts it) waits for the next multiple of D since the zero
//     time, so that every stream with the same interval flushes at the
//     same instants and a reader of several wakes once for all of them;
//     news waits at most NewsWait and takes what waits with it out. With
//     0, each event is written at once. The flush timer runs only while
//     something waits: an idle stream wakes nobody.
//   - ?status=flush ends each flush with a status line (StatusLine): the
//     component's status, as its /debug/klab/status serves it, once the
//     batch before it was written, so that a reader sees what the batch
//     did without asking.
//   - ?series=true writes the routine events of a flush that the component
//     counts as repeats of one another (a heartbeat between the same two
//     raft members) as one, the last of them, with how many it stands for,
//     as Kubernetes folds repeated Events into a series with a count. The
//     sequence numbers of the others are reported as skipped on the next
//     event written, so that a reader tells them from events lost. It
//     folds only what a flush holds: with ?quiet=0 there is nothing to
//     fold.
//
// A malformed parameter is answered with 400 Bad Request, naming it.
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
	// StatusKind is the kind of a StatusLine.
	StatusKind = "status"
)

// StatusLine ends each flush of a stream read with ?status=flush. It is
// not numbered, and a component's events never have its kind.
type StatusLine struct {
	Kind   string    `json:"kind"` // StatusKind
	Time   time.Time `json:"time"`
	Status any       `json:"status"`
}

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
	// status, when the reader asked for status lines, returns the
	// component's status.
	status func() any
	// fold, when the reader asked for series, rewrites each batch before
	// it is written.
	fold func([]any) []any
}

// Start begins a stream on w for the request r: its hold is r's ?quiet=
// or, without one, def; with ?status=flush, status (which must not be nil
// then) gives each flush's status line. A malformed or out-of-range
// parameter is answered with 400 Bad Request, and Start returns the error.
func Start(w http.ResponseWriter, r *http.Request, def time.Duration, status func() any) (*Stream, error) {
	q := r.URL.Query()
	hold := def
	if v := q.Get("quiet"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > MaxQuiet {
			return nil, badRequest(w, fmt.Errorf("quiet=%q: want a duration from 0 to %v", v, MaxQuiet))
		}
		hold = d
	}
	s := &Stream{w: w, enc: json.NewEncoder(w), hold: hold}
	switch v := q.Get("status"); v {
	case "":
	case "flush":
		if status == nil {
			return nil, badRequest(w, fmt.Errorf("status=flush: this stream has no status"))
		}
		s.status = status
	default:
		return nil, badRequest(w, fmt.Errorf("status=%q: want flush", v))
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-cache")
	s.timer = time.NewTimer(time.Hour)
	s.timer.Stop()
	s.flusher, _ = w.(http.Flusher)
	return s, nil
}

// badRequest answers with 400 and err's text, and returns err.
func badRequest(w http.ResponseWriter, err error) error {
	http.Error(w, err.Error(), http.StatusBadRequest)
	return err
}

// Send writes v and sees that it is flushed in time: news within NewsWait,
// routine events on the next multiple of the hold.
func (s *Stream) Send(v any, news bool) error {
	if s.hold == 0 {
		s.waiting = append(s.waiting, v)
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

// Flush writes and sends what waits, followed by a status line if the
// reader asked for them and anything waited. An error is the reader's
// connection failing: the stream is over.
func (s *Stream) Flush() error {
	s.due = time.Time{}
	s.timer.Stop()
	batch := s.waiting
	if len(batch) > 0 && s.fold != nil {
		batch = s.fold(batch)
	}
	if len(batch) > 0 && s.status != nil {
		batch = append(batch, StatusLine{Kind: StatusKind, Time: time.Now(), Status: s.status()})
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
