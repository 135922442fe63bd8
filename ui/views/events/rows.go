package events

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/klab-dev/klab/assets/i18n"

	eventsv1 "k8s.io/api/events/v1"

	"github.com/klab-dev/klab/cluster/apiserver"
)

// Buffer sizes: the view keeps the latest of each, as a terminal's
// scrollback does.
const (
	maxEvents   = 500
	maxRequests = 500
)

// eventRow is one Kubernetes Event as the view keeps it.
type eventRow struct {
	UID string `json:"uid"`
	// Time is when the event was last seen; First when first.
	Time  time.Time `json:"time"`
	First time.Time `json:"first"`
	// Type is Normal or Warning.
	Type   string `json:"type,omitempty"`
	Reason string `json:"reason,omitempty"`
	Note   string `json:"note,omitempty"`
	Action string `json:"action,omitempty"`
	// Kind, Namespace and Name say which object the event is about
	// (regarding).
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"ns,omitempty"`
	Name      string `json:"name,omitempty"`
	// Controller and Instance say who reported it (the scheduler, a
	// kubelet on some node, ...).
	Controller string `json:"by,omitempty"`
	Instance   string `json:"on,omitempty"`
	Count      int32  `json:"count,omitempty"`
}

// rowOf takes what the view shows from an events.k8s.io/v1 Event, which
// may have been written through either Events API: the newer one fills
// eventTime, series and reporting*, the older one the deprecated* fields.
func rowOf(e *eventsv1.Event) eventRow {
	r := eventRow{
		UID: string(e.UID), Type: e.Type, Reason: e.Reason, Note: e.Note, Action: e.Action,
		Kind: e.Regarding.Kind, Namespace: e.Regarding.Namespace, Name: e.Regarding.Name,
		Controller: e.ReportingController, Instance: e.ReportingInstance,
		Count: max(e.DeprecatedCount, 1),
	}
	if r.Namespace == "" && r.Kind != "Node" && r.Kind != "Namespace" {
		r.Namespace = e.Namespace
	}
	if r.Controller == "" {
		r.Controller = e.DeprecatedSource.Component
	}
	if r.Instance == "" {
		r.Instance = e.DeprecatedSource.Host
	}
	r.First = firstNonZero(e.DeprecatedFirstTimestamp.Time, e.EventTime.Time, e.CreationTimestamp.Time)
	r.Time = firstNonZero(e.DeprecatedLastTimestamp.Time, e.EventTime.Time, e.CreationTimestamp.Time)
	if e.Series != nil {
		r.Count = max(e.Series.Count, r.Count)
		if t := e.Series.LastObservedTime.Time; t.After(r.Time) {
			r.Time = t
		}
	}
	return r
}

func firstNonZero(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// object is the object an event is about as kubectl names it: pod/web-1.
func (r *eventRow) object() string {
	if r.Kind == "" {
		return r.Name
	}
	return strings.ToLower(r.Kind) + "/" + r.Name
}

// text is the whole row as plain text, what the filter searches: every
// field, whichever columns the width leaves on screen.
func (r *eventRow) text(loc *time.Location) string {
	return strings.Join([]string{r.Time.In(loc).Format("15:04:05"), r.Type, r.Reason, r.Namespace, r.object(), r.Note, r.Controller, r.Instance}, " ")
}

// eventLog keeps the latest events in time order, the newest last, one
// row per Event (a repeated event updates its row).
type eventLog struct {
	rows []eventRow
}

// upsert adds an event or updates it, keeping the order.
func (l *eventLog) upsert(r eventRow) {
	for i := range l.rows {
		if l.rows[i].UID == r.UID {
			l.rows = append(l.rows[:i], l.rows[i+1:]...)
			break
		}
	}
	i := sort.Search(len(l.rows), func(i int) bool { return l.rows[i].Time.After(r.Time) })
	l.rows = append(l.rows, eventRow{})
	copy(l.rows[i+1:], l.rows[i:])
	l.rows[i] = r
	if len(l.rows) > maxEvents {
		l.rows = l.rows[len(l.rows)-maxEvents:]
	}
}

func (l *eventLog) index(uid string) int {
	for i := range l.rows {
		if l.rows[i].UID == uid {
			return i
		}
	}
	return -1
}

// requestRow is one request an API server served.
type requestRow struct {
	// Server is the master whose API server served it.
	Server string `json:"server"`
	apiserver.RequestEvent
}

// resource is what the request was for: resource/subresource, or the
// path of a request for no resource (/version, /healthz).
func (r *requestRow) resource() string {
	switch {
	case r.Resource == "":
		return r.Path
	case r.Subresource != "":
		return r.Resource + "/" + r.Subresource
	}
	return r.Resource
}

// object is namespace/name, or the part of it the request had.
func (r *requestRow) object() string {
	switch {
	case r.Namespace != "" && r.Name != "":
		return r.Namespace + "/" + r.Name
	case r.Namespace != "":
		return r.Namespace + "/"
	}
	return r.Name
}

// latency is the request's duration in a short form: a watch lasts
// minutes, a get a millisecond.
func (r *requestRow) latency() string {
	ms := r.LatencyMS
	switch {
	case ms >= 60_000:
		return fmt.Sprintf("%.1fm", ms/60_000)
	case ms >= 1000:
		return fmt.Sprintf("%.1fs", ms/1000)
	case ms >= 10:
		return fmt.Sprintf("%.0fms", ms)
	}
	return fmt.Sprintf("%.1fms", ms)
}

// authorization says how the request was authorized: allowed by which
// binding (from upstream's reason, "RBAC: allowed by ClusterRoleBinding
// "x" of ClusterRole "y" to User "z""), or forbidden and why; empty for a
// request never authorized (a public path, no valid credentials).
func (r *requestRow) authorization() string {
	switch r.Decision {
	case apiserver.DecisionAllow:
		if binding, ok := allowingBinding(r.Reason); ok {
			return i18n.T("ui.events.authz.allowed-by", binding)
		}
		if r.Reason != "" {
			return i18n.T("ui.events.authz.allowed-because", r.Reason)
		}
		return i18n.T("ui.events.authz.allowed")
	case apiserver.DecisionForbid:
		if r.Reason != "" {
			return i18n.T("ui.events.authz.forbidden-because", r.Reason)
		}
		return i18n.T("ui.events.authz.forbidden")
	}
	return ""
}

// allowingBinding is the binding an RBAC reason names, as Kind/name:
// "ClusterRoleBinding/system:kube-scheduler".
func allowingBinding(reason string) (string, bool) {
	rest, ok := strings.CutPrefix(reason, "RBAC: allowed by ")
	if !ok {
		return "", false
	}
	kind, rest, ok := strings.Cut(rest, " ")
	if !ok {
		return "", false
	}
	name, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return "", false
	}
	name, _ = strconv.Unquote(name)
	return kind + "/" + name, true
}

func (r *requestRow) text(loc *time.Location) string {
	return strings.Join([]string{r.Time.In(loc).Format("15:04:05"), r.Server, r.Verb, r.resource(), r.object(), r.User,
		strings.Join(r.Groups, ","), strconv.Itoa(r.Code), r.latency(), r.authorization(), r.Reason}, " ")
}

// requestLog keeps the latest requests in time order: each API server
// replays its recent requests when the view connects, so streams from
// several servers arrive out of order.
type requestLog struct {
	rows []requestRow
}

func (l *requestLog) add(r requestRow) {
	i := len(l.rows)
	for i > 0 && l.rows[i-1].Time.After(r.Time) {
		i--
	}
	l.rows = append(l.rows, requestRow{})
	copy(l.rows[i+1:], l.rows[i:])
	l.rows[i] = r
	if len(l.rows) > maxRequests {
		l.rows = l.rows[len(l.rows)-maxRequests:]
	}
}
