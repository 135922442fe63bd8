package proxy

import (
	corev1 "k8s.io/api/core/v1"
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
