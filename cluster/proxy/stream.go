package proxy

import (
	"time"

	"github.com/klab-dev/klab/cluster/internal/eventstream"
)

// Kinds of events on /debug/klab/events.
const (
	// EventSync: a sync ran (Mode, Duration, Rules).
	EventSync = "sync"
	// EventModeChanged: the mode (or the ipvs scheduler) was switched
	// (From, To, and the new mode's first sync's Duration and Rules).
	EventModeChanged = "mode-changed"
	// EventConfigError: the ConfigMap holds a configuration kube-proxy
	// cannot use; Mode is the one that keeps running.
	EventConfigError = "config-error"
	// EventNodePortError: a NodePort could not be opened (NodePort).
	EventNodePortError = "nodeport-error"
)

// Event is one thing the proxy did, as the event stream carries it.
type Event struct {
	eventstream.Header
	Kind     string        `json:"kind"`
	Mode     string        `json:"mode,omitempty"`
	From     string        `json:"from,omitempty"`
	To       string        `json:"to,omitempty"`
	Duration time.Duration `json:"durationNs"`
	Rules    int           `json:"rules"`
	NodePort int           `json:"nodePort,omitempty"`
	Message  string        `json:"message,omitempty"`
}

// eventRingSize is how many events a new subscriber can replay.
const eventRingSize = 256
