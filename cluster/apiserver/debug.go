package apiserver

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/internal/componentbase"
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
	// Groups are the user's groups, as authentication found them.
	Groups []string `json:"groups,omitempty"`
	// Decision and Reason are the authorization's, as upstream's audit
	// annotations authorization.k8s.io/decision ("allow" or "forbid")
	// and authorization.k8s.io/reason give them: the RBAC binding that
	// allowed the request, or, for a forbidden one, usually none. Both
	// are empty for a request never authorized (a public path such as
	// /healthz, or one without valid credentials).
	Decision string `json:"decision,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// UserAgent is the client's, as it sent it: kubectl's, a
	// component's, or one of klab's own observers' (klab-tui,
	// klab-lessons).
	UserAgent string  `json:"userAgent,omitempty"`
	Code      int     `json:"code"`
	LatencyMS float64 `json:"latencyMs"`
	// Revision is the etcd revision the response was read or written at.
	Revision int64 `json:"revision,omitempty"`
}

// Authorization decisions as the request stream and upstream's audit
// annotation authorization.k8s.io/decision name them.
const (
	DecisionAllow  = "allow"
	DecisionForbid = "forbid"
)

// authzOutcome is what authorization decided about a request.
type authzOutcome struct{ decision, reason string }

func newAuthzOutcome(d auth.Decision, reason string) authzOutcome {
	if d == auth.DecisionAllow {
		return authzOutcome{decision: DecisionAllow, reason: reason}
	}
	return authzOutcome{decision: DecisionForbid, reason: reason}
}

// requestLogSize is how many recent requests a new reader of the stream
// is replayed.
const requestLogSize = 256

// newRequestEvent describes a request served.
func newRequestEvent(info requestInfo, user, userAgent string, code int, latency time.Duration, revision string) RequestEvent {
	ev := RequestEvent{
		Time: time.Now(), Verb: info.verb, Resource: info.resource, Subresource: info.subresource,
		Namespace: info.namespace, Name: info.name, User: user, UserAgent: userAgent, Code: code,
		LatencyMS: float64(latency.Microseconds()) / 1000,
	}
	if !info.resourceRequest {
		ev.Path = info.path
	}
	ev.Revision, _ = strconv.ParseInt(revision, 10, 64)
	return ev
}

// Status is the API server's /debug/klab/status.
type Status struct {
	Name     string `json:"name"`
	Listen   string `json:"listen"`
	Ready    bool   `json:"ready"`
	Revision int64  `json:"revision,omitempty"`
	Error    string `json:"error,omitempty"`
}

// status reports the server's state, as /debug/klab/status serves it.
func (s *Server) status(ctx context.Context) Status {
	st := Status{Name: s.cfg.Name, Listen: s.cfg.Listen}
	if rev, err := s.store.CurrentRevision(ctx); err != nil {
		st.Error = err.Error()
	} else {
		st.Ready, st.Revision = true, rev
	}
	return st
}

// serveDebug serves /debug/klab/status and /debug/klab/events: the
// request stream, recent requests first, every request routine traffic
// (a reader that draws them a few times a second gives ?quiet=).
func (s *Server) serveDebug(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/debug/klab/status":
		componentbase.WriteJSON(w, http.StatusOK, s.status(r.Context()))
	case "/debug/klab/events":
		eventstream.Serve(w, r, s.requests, eventstream.Options[RequestEvent]{
			Routine: func(RequestEvent) bool { return true },
			Status:  func() any { return s.status(r.Context()) },
			Done:    s.life.Quit(),
		})
	default:
		writeError(w, r, notFoundResource())
	}
}
