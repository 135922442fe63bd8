package nodelifecycle

import (
	"context"
	"time"
)

// Transition kinds: what a Transition reports.
const (
	// TransitionNodeReady is a change of a node's Ready condition status
	// (From and To are "True", "False" or "Unknown"), whether the kubelet
	// posted it or this controller set it to Unknown.
	TransitionNodeReady = "NodeReady"
	// TransitionTaintAdded and TransitionTaintRemoved are taints this
	// controller put on or took off a node (Taint is "key:Effect").
	TransitionTaintAdded   = "TaintAdded"
	TransitionTaintRemoved = "TaintRemoved"
	// TransitionPodNotReady is a pod whose Ready condition this controller
	// set to False because its node is not ready.
	TransitionPodNotReady = "PodNotReady"
	// TransitionZoneState is a zone entering a new disruption state (From
	// and To are Initial, Normal, PartialDisruption or FullDisruption).
	TransitionZoneState = "ZoneState"
	// TransitionEvictionScheduled is a pod the taint eviction controller
	// will delete at At unless the taint goes first;
	// TransitionEvictionCancelled is such a deletion called off; and
	// TransitionPodEvicted is a pod it deleted.
	TransitionEvictionScheduled = "EvictionScheduled"
	TransitionEvictionCancelled = "EvictionCancelled"
	TransitionPodEvicted        = "PodEvicted"
)

// Transition is one thing the node lifecycle or taint eviction controller
// saw or did, as the lab's event stream shows it.
type Transition struct {
	Kind string
	// Node is the node concerned, if any.
	Node string
	// Pod is "namespace/name" for pod transitions.
	Pod string
	// Taint is "key:Effect" for taint transitions.
	Taint string
	// Zone is the zone of a ZoneState transition ("" is the zone of nodes
	// without topology labels).
	Zone string
	// From and To are the old and new status or state.
	From, To string
	// At is when a scheduled eviction is due.
	At time.Time
}

type observerKey struct{}

// WithObserver returns a context that makes the controllers built with it
// (through Init and InitTaintEviction) report every Transition to observe.
// The controller manager uses it to stream node lifecycle transitions on its
// debug server. observe must not block.
func WithObserver(ctx context.Context, observe func(Transition)) context.Context {
	return context.WithValue(ctx, observerKey{}, observe)
}

// observerFrom returns the observer WithObserver put into ctx, or one that
// drops everything.
func observerFrom(ctx context.Context) func(Transition) {
	if f, ok := ctx.Value(observerKey{}).(func(Transition)); ok && f != nil {
		return f
	}
	return func(Transition) {}
}
