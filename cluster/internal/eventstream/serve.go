package eventstream

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Options are what a component's stream serves beyond its hub's events.
type Options[E any] struct {
	// Hold is the flush interval of a reader that gives no ?quiet=: 0
	// writes each event at once.
	Hold time.Duration
	// Routine reports whether an event is routine traffic, which may wait
	// for the flush interval; nil makes every event news.
	Routine func(E) bool
	// Status returns the component's status for ?status=flush.
	Status func() any
	// Series, for ?series=true, returns the key of the series a routine
	// event belongs to, if it is one the component counts as a repeat
	// (the same key, a repeat); nil makes ?series= a bad request.
	Series func(E) (key string, ok bool)
	// Summarize sets on an event written for ?series=true how many events
	// it stands for, itself included, and how many sequence numbers just
	// before it the stream skipped.
	Summarize func(e *E, count int, skipped uint64)
	// Done ends every stream when it closes: the component is stopping.
	Done <-chan struct{}
}

// Serve streams h's events to the reader of r, as the package doc says,
// until the reader goes away or opts.Done closes.
func Serve[E any](w http.ResponseWriter, r *http.Request, h *Hub[E], opts Options[E]) {
	q := r.URL.Query()
	var since uint64
	if v := q.Get("since"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			badRequest(w, fmt.Errorf("since=%q: want a sequence number", v))
			return
		}
		since = n
	}
	var series bool
	if v := q.Get("series"); v != "" {
		b, err := strconv.ParseBool(v)
		switch {
		case err != nil:
			badRequest(w, fmt.Errorf("series=%q: want true or false", v))
			return
		case b && opts.Series == nil:
			badRequest(w, fmt.Errorf("series=%s: this stream has no series", v))
			return
		}
		series = b
	}
	stream, err := Start(w, r, opts.Hold, opts.Status)
	if err != nil {
		return
	}
	defer stream.Close()
	if series {
		stream.fold = foldSeries(opts)
	}
	past, events, cancel := h.Subscribe(since)
	defer cancel()
	send := func(e E) error { return stream.Send(e, opts.Routine == nil || !opts.Routine(e)) }
	for _, e := range past {
		if send(e) != nil {
			return
		}
	}
	if stream.Flush() != nil {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-opts.Done:
			return
		case e := <-events:
			if send(e) != nil {
				return
			}
		case <-stream.Due():
			if stream.Flush() != nil {
				return
			}
		}
	}
}

// foldSeries returns a fold that writes each series of a batch as its last
// event, summarized: the events left out count as skipped on the next
// event written, which is in the same batch (each series' last is kept),
// so that the stream's sequence numbers stay in order.
func foldSeries[E any](opts Options[E]) func([]any) []any {
	return func(batch []any) []any {
		last := map[string]int{}
		count := map[string]int{}
		repeats := false
		for i, v := range batch {
			if k, ok := opts.Series(v.(E)); ok {
				last[k] = i
				count[k]++
				repeats = repeats || count[k] > 1
			}
		}
		if !repeats {
			return batch
		}
		out := batch[:0]
		var skipped uint64
		for i, v := range batch {
			e := v.(E)
			n := 1
			if k, ok := opts.Series(e); ok {
				if last[k] != i {
					skipped++
					continue
				}
				n = count[k]
			}
			if n > 1 || skipped > 0 {
				opts.Summarize(&e, n, skipped)
				skipped = 0
			}
			out = append(out, e)
		}
		return out
	}
}
