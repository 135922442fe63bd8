// Package components starts each cluster component from its runtime spec.
//
// It is the one place where a runtime.EtcdSpec becomes a running etcd
// member, a runtime.APIServerSpec a running API server, a
// runtime.KubeletSpec a running kubelet, and so on: the local runtime calls
// it for every component it runs inside the klab process, and `klab
// component <name> --spec <json>` calls it as a container's entrypoint in
// the Docker runtime. The two differ only in what they hand in: the local
// runtime gives an etcd member its fault table, client components its
// network gate as their dialer and a kubelet its in-process pods; a
// container dials the real network and gives a kubelet Docker's pods.
package components

import (
	"context"
	"net"
)

// Process is one running component: what a container's main process is in
// the Docker runtime.
type Process interface {
	// Stop shuts it down gracefully; Kill at once, as kill -9 would.
	Stop() error
	Kill()
	// Done is closed once it has stopped, asked to or by itself; Err says
	// why it stopped by itself (nil after Stop or Kill).
	Done() <-chan struct{}
	Err() error
}

// Pausable is a Process that can freeze in place without a container
// engine's help, for the local runtime's twin of docker pause.
type Pausable interface {
	Process
	// Pause freezes it; Resume thaws it.
	Pause() error
	Resume() error
}

// DialFunc opens a component's connections to the API server. nil means the
// default dialer; the local runtime passes its network gate, which lets it
// partition, pause and kill a component as a kernel and a container engine
// would.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)
