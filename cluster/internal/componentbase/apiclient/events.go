package apiclient

import (
	"context"

	eventsv1 "k8s.io/api/events/v1"
	typedeventsv1 "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/events"
)

// NewEventBroadcaster returns an events.k8s.io/v1 broadcaster whose
// events name instance as their reporting instance ("kube-scheduler-
// master-1"). client-go names it after the process's host name, which
// every component of a local lab shares; upstream's, one per node,
// differ.
func NewEventBroadcaster(client typedeventsv1.EventsV1Interface, instance string) events.EventBroadcaster {
	return events.NewBroadcaster(&instanceSink{EventSink: &events.EventSinkImpl{Interface: client}, instance: instance})
}

// instanceSink writes events with a reporting instance of its own.
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
