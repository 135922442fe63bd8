// Package labels holds the labels the kubelet puts on the sandboxes and
// containers it asks a runtime to create. They are upstream's (pkg/kubelet/
// types/labels.go), so `docker ps --filter label=io.kubernetes.pod.name=web`
// works as on a real node, and they are how a restarted kubelet finds the
// pods it was running: it keeps no state of its own.
package labels

const (
	// PodName, PodNamespace and PodUID identify the pod a sandbox or
	// container belongs to; the UID tells apart two pods of the same name
	// (one deleted, one recreated).
	PodName      = "io.kubernetes.pod.name"
	PodNamespace = "io.kubernetes.pod.namespace"
	PodUID       = "io.kubernetes.pod.uid"
	// ContainerName is the name of the pod's container that a runtime
	// container runs.
	ContainerName = "io.kubernetes.container.name"
	// ContainerType says whether a container is one of the pod's init
	// containers or regular containers ("INIT_CONTAINER" or "CONTAINER").
	ContainerType = "io.kubernetes.container.type"
)

// Values of ContainerType.
const (
	TypeInit    = "INIT_CONTAINER"
	TypeRegular = "CONTAINER"
)
