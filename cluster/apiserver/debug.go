package apiserver

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/klab-dev/klab/cluster/internal/eventstream"
)

// RequestEvent is one served request, as the UI's request-path view and
// `/debug/klab/events` show it.
type RequestEvent struct {
	Time        time.Time `json:"time"`
	Verb        string    `json:"verb"`
	Resource    string    `json:"resource,omitempty"`
	Subresource string    `json:"subresource,omitempty"`
	Namespace   string    `json:"namespace,omitempty"`
	Name        string    `json:"name,omitempty"`
	Path        string    `json:"path,omitempty"`
	User        string    `json:"user"`
	Code        int       `json:"code"`
	LatencyMS   float64   `json:"latencyMs"`
	// Revision is the etcd revision the response was read or written at.
	Revision int64 `json:"revision,omitempty"`
}

// requestLog keeps recent requests and fans them out to subscribers.
type requestLog struct {
	mu     sync.Mutex
	recent []RequestEvent
	subs   map[chan RequestEvent]struct{}
}

const requestLogSize = 256

func newRequestLog() *requestLog { return &requestLog{subs: map[chan RequestEvent]struct{}{}} }

func (l *requestLog) record(info requestInfo, user string, code int, latency time.Duration, revision string) {
	ev := RequestEvent{
		Time: time.Now(), Verb: info.verb, Resource: info.resource, Subresource: info.subresource,
		Namespace: info.namespace, Name: info.name, User: user, Code: code,
		LatencyMS: float64(latency.Microseconds()) / 1000,
	}
	if !info.resourceRequest {
		ev.Path = info.path
	}
	ev.Revision, _ = strconv.ParseInt(revision, 10, 64)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.recent) == requestLogSize {
		copy(l.recent, l.recent[1:])
		l.recent = l.recent[:requestLogSize-1]
	}
	l.recent = append(l.recent, ev)
	for ch := range l.subs {
		select {
		case ch <- ev:
		default: // a slow reader misses events rather than slowing requests
		}
	}
}

func (l *requestLog) subscribe() (chan RequestEvent, []RequestEvent) {
	ch := make(chan RequestEvent, 256)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.subs[ch] = struct{}{}
	return ch, append([]RequestEvent(nil), l.recent...)
}

func (l *requestLog) unsubscribe(ch chan RequestEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.subs, ch)
}

// Status is the API server's /debug/klab/status.
type Status struct {
	Name     string `json:"name"`
	Listen   string `json:"listen"`
	Ready    bool   `json:"ready"`
	Revision int64  `json:"revision,omitempty"`
	Error    string `json:"error,omitempty"`
}

// serveDebug serves /debug/klab/status and /debug/klab/events (the
// request stream, newline-delimited JSON, recent requests first; ?quiet=D
// flushes it on the multiples of D, as eventstream says).
func (s *Server) serveDebug(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/debug/klab/status":
		st := Status{Name: s.cfg.Name, Listen: s.cfg.Listen}
		if rev, err := s.store.CurrentRevision(r.Context()); err != nil {
			st.Error = err.Error()
		} else {
			st.Ready, st.Revision = true, rev
		}
		writeJSON(w, http.StatusOK, st)
	case "/debug/klab/events":
		// Each request is flushed at once, or on the multiples of
		// ?quiet= for a reader that draws them a few times a second.
		stream, err := eventstream.Start(w, r, 0)
		if err != nil {
			return
		}
		defer stream.Close()
		ch, recent := s.requests.subscribe()
		defer s.requests.unsubscribe(ch)
		for _, ev := range recent {
			if stream.Send(ev, false) != nil {
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
			case ev := <-ch:
				if stream.Send(ev, false) != nil {
					return
				}
			case <-stream.Due():
				if stream.Flush() != nil {
					return
				}
			}
		}
	default:
		writeError(w, r, notFoundResource())
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
