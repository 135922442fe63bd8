package dockercri

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docker/docker/api/types/events"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// Back-off between attempts to follow the engine's events again after the
// stream broke (the engine restarted, the socket went away).
const (
	eventsRetryMin = 100 * time.Millisecond
	eventsRetryMax = 5 * time.Second
	// eventsHealthy is how long a stream must have lasted for the next
	// break to start the back-off afresh.
	eventsHealthy = 30 * time.Second
)

// watchEvents follows the engine's events for the node's pod containers
// and sends them on r.events until ctx is done. When the stream breaks it
// follows again from the time of the last event it saw, so nothing in
// between is lost (an event seen twice only wakes a pod worker twice).
func (r *Runtime) watchEvents(ctx context.Context) {
	defer close(r.eventsDone)
	since := time.Now()
	retry := eventsRetryMin
	for {
		opened := time.Now()
		last, err := r.followEvents(ctx, since)
		if ctx.Err() != nil {
			return
		}
		if !last.IsZero() {
			since = last
		}
		if time.Since(opened) > eventsHealthy {
			retry = eventsRetryMin
		}
		r.logger.Warn("Lost the Docker engine's event stream, following it again", "retryIn", retry, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		}
		retry = min(2*retry, eventsRetryMax)
	}
}

// followEvents forwards events from since until the stream breaks or ctx
// is done, and returns the time of the last event it saw.
func (r *Runtime) followEvents(ctx context.Context, since time.Time) (time.Time, error) {
	args := r.ownFilter(labels.RolePod)
	args.Add("type", string(events.ContainerEventType))
	for _, action := range []events.Action{events.ActionStart, events.ActionDie, events.ActionOOM} {
		args.Add("event", string(action))
	}
	messages, errs := r.docker.Events(ctx, events.ListOptions{
		Since:   fmt.Sprintf("%d.%09d", since.Unix(), since.Nanosecond()),
		Filters: args,
	})
	var last time.Time
	for {
		select {
		case msg := <-messages:
			last = time.Unix(0, msg.TimeNano)
			r.forward(msg)
		case err := <-errs:
			if err == nil {
				err = errors.New("the event stream ended")
			}
			return last, err
		}
	}
}

// forward turns a Docker event into a cri.Event.
func (r *Runtime) forward(msg events.Message) {
	var typ cri.EventType
	switch msg.Action {
	case events.ActionStart:
		typ = cri.ContainerStarted
	case events.ActionDie:
		typ = cri.ContainerExited
	case events.ActionOOM:
		// The kernel killed it for its memory; "die" follows, and the
		// container's status says OOMKilled.
		r.logger.Info("Container ran out of memory", "container", msg.Actor.ID, "name", msg.Actor.Attributes[labels.ContainerName])
		r.oomKilled.Store(msg.Actor.ID, true)
		return
	default:
		return
	}
	attrs := msg.Actor.Attributes // the container's labels, among others
	if !r.owns(attrs, labels.RolePod) {
		return
	}
	ev := cri.Event{Type: typ, ContainerID: msg.Actor.ID, SandboxID: attrs[labels.SandboxID], Labels: criLabels(attrs)}
	select {
	case r.events <- ev:
	default:
		r.logger.Warn("Dropped container event, the kubelet is not reading", "type", typ, "container", msg.Actor.ID)
	}
}
