// Package labels names the Docker objects klab creates and the labels it
// finds them by. It imports nothing from Docker, so that the runtime, the
// kubelet's Docker CRI and the commands that clean up agree on one
// vocabulary without depending on each other.
//
// Every container, volume and network klab creates carries LabelCluster and
// LabelRole; klab finds its objects by label only, never by name.
package labels

import "strings"

// Label keys.
const (
	// Cluster is the cluster's name.
	Cluster = "io.klab.cluster"
	// Role says what the object is: a node role ("master", "worker",
	// "lb"), RoleComponent, RolePod, RoleSandbox, RoleNetwork, RoleVolume.
	Role = "io.klab.role"
	// Node is the node an object belongs to.
	Node = "io.klab.node"
	// Component is a component container's component ("etcd").
	Component = "io.klab.component"
	// IP is the address a container was given on the cluster network, so
	// that heal reconnects it where it was.
	IP = "io.klab.ip"
	// ServePort is the port a component container's component serves on
	// (an etcd member's client port, an API server's secure port), which
	// Start waits for it to accept connections on; a component that
	// serves nothing has none.
	ServePort = "io.klab.serve-port"
	// StandBy marks a component container whose process stands its
	// component down and up on the signals of package standby; one made
	// by an older klab would end on them instead.
	StandBy = "io.klab.standby"
	// BuildID is the build a klab/node image was made from.
	BuildID = "io.klab.build-id"
)

// Pod labels, on pod sandboxes and pod containers, as the kubelet's
// dockershim labelled them.
const (
	PodName       = "io.kubernetes.pod.name"
	PodNamespace  = "io.kubernetes.pod.namespace"
	PodUID        = "io.kubernetes.pod.uid"
	ContainerName = "io.kubernetes.container.name"
	SandboxID     = "io.kubernetes.sandbox.id"
	Attempt       = "io.klab.attempt"
	// PodLabels holds the CRI labels of a pod sandbox or container,
	// JSON-encoded.
	PodLabels = "io.klab.pod-labels"
	// StandIn marks a container that runs klab's stand-in for a tutorial
	// image the engine could not pull (its value names the stand-in);
	// Image then keeps the image the pod asked for, which the container's
	// status reports.
	StandIn = "io.klab.stand-in"
	Image   = "io.klab.image"
)

// Values of Role besides the node roles.
const (
	RoleComponent = "component"
	RoleSandbox   = "pod-sandbox"
	RolePod       = "pod"
	RoleNetwork   = "network"
	RoleVolume    = "volume"
	RoleImage     = "image"
	// RoleTask is a one-shot container klab runs to completion and
	// removes: an etcd member's data dir restored inside its volume.
	RoleTask = "task"
)

// Images klab builds.
const (
	// NodeImage is the repository of the image every node and component
	// container runs; its tag is the build ID.
	NodeImage = "klab/node"
	// AppImage is the demo workload's repository.
	AppImage = "klab/app"
)

// Prefix is the start of every name klab gives a Docker object of a
// cluster: "klab-<cluster>".
func Prefix(cluster string) string { return "klab-" + cluster }

// Network names a cluster's network.
func Network(cluster string) string { return Prefix(cluster) }

// NodeContainer names a node's pause container, which holds the node's
// network namespace: "klab-<cluster>-<node>".
func NodeContainer(cluster, node string) string { return Prefix(cluster) + "-" + node }

// ComponentContainer names a component's container:
// "klab-<cluster>-<node>-<component>".
func ComponentContainer(cluster, node, component string) string {
	return NodeContainer(cluster, node) + "-" + component
}

// EtcdVolume names an etcd member's data volume.
func EtcdVolume(cluster, node string) string { return NodeContainer(cluster, node) + "-etcd" }

// Filter returns the label filter "key=value" Docker takes.
func Filter(key, value string) string { return key + "=" + value }

// ClusterFilter is the filter that finds every object of a cluster.
func ClusterFilter(cluster string) string { return Filter(Cluster, cluster) }

// SanitizeName makes s usable inside a container name, which Docker limits
// to [a-zA-Z0-9][a-zA-Z0-9_.-]*.
func SanitizeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			return r
		}
		return '-'
	}, s)
}
