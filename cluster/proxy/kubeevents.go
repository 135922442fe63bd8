package proxy

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/client-go/tools/events"
)

// Reasons of the Events kube-proxy writes about its Node. Starting is
// upstream's; the others are klab's, since a real kube-proxy neither
// switches modes nor rereads its configuration while it runs.
const (
	ReasonStarting             = "Starting"
	ReasonModeChanged          = "ProxyModeChanged"
	ReasonInvalidConfiguration = "InvalidProxyConfiguration"
)

// Actions of those Events (events.k8s.io/v1 requires one).
const (
	actionStart             = "StartKubeProxy"
	actionSwitchMode        = "SwitchProxyMode"
	actionLoadConfiguration = "LoadConfiguration"
)

const (
	eventTypeNormal  = corev1.EventTypeNormal
	eventTypeWarning = corev1.EventTypeWarning
)

// noteLengthLimit is the API's limit on an Event's note, in bytes.
const noteLengthLimit = 1024

// truncateNote keeps a note within the API's limit.
func truncateNote(s string) string {
	if len(s) <= noteLengthLimit {
		return s
	}
	return s[:noteLengthLimit-3] + "..."
}

// instanceSink writes events with this proxy's reporting instance.
// client-go names the instance after the process's host name, which every
// kube-proxy of a local lab shares; upstream's, one per node, differ.
type instanceSink struct {
	events.EventSink
	instance string
}

func (s *instanceSink) Create(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	e.ReportingInstance = s.instance
	return s.EventSink.Create(ctx, e)
}

func (s *instanceSink) Update(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	e.ReportingInstance = s.instance
	return s.EventSink.Update(ctx, e)
}
