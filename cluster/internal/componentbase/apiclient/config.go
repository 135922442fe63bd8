// Package apiclient is what the klab components that talk to the API
// server (the scheduler, the controller manager, kube-proxy, the kubelet)
// share: their client configuration and their events.k8s.io recorder's
// sink. It is apart from componentbase so that the components that do not
// (etcd, the demo app) do not depend on client-go.
package apiclient

import "k8s.io/client-go/rest"

// Defaults are a component's own client settings, as its upstream
// counterpart's flags default them (--kube-api-qps, --kube-api-burst).
type Defaults struct {
	// UserAgent names the component to the API server
	// ("kube-scheduler").
	UserAgent string
	// QPS and Burst replace client-go's 5 and 10, which would throttle a
	// component that writes for every pod.
	QPS   float32
	Burst int
}

// Config returns a copy of base for a component's clients, with each of
// d's settings where base leaves it unset.
func Config(base *rest.Config, d Defaults) *rest.Config {
	cfg := rest.CopyConfig(base)
	if cfg.QPS == 0 {
		cfg.QPS = d.QPS
	}
	if cfg.Burst == 0 {
		cfg.Burst = d.Burst
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = d.UserAgent
	}
	return cfg
}
