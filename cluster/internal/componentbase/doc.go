// Package componentbase is what every klab component shares, as
// k8s.io/component-base is for Kubernetes' own: the lifecycle (start once,
// stop gracefully or kill, done, err), the HTTP server of its debug
// endpoints, the JSON answers they give and its logger. A component writes
// only what is its own and takes the rest from here; its event stream comes
// from package eventstream, and what those that talk to the API server
// share (client configuration, event sink) from package apiclient.
package componentbase
