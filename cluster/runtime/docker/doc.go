// Package docker is the Docker runtime: every component of a cluster runs in
// a container of its own, on a Docker network of the cluster's own.
//
// A node is a small "pause" container that does nothing but hold the node's
// network namespace, as a pod's pause container holds the pod's. It is
// attached to the cluster's bridge network at a fixed address and publishes
// the node's ports on 127.0.0.1 of the machine running klab. Each component
// of the node (etcd, kube-apiserver, ...) is a separate container joined to
// that namespace (NetworkMode "container:<pause>"), so `docker ps` lists
// them one by one, they reach each other on localhost, and stopping the
// pause container takes the whole node off the network.
//
// Every image, container, volume and network the runtime makes carries the
// labels of package labels, and the runtime finds them by label only.
// Nothing lives only in memory: a process that attaches to a cluster
// another process created (`klab chaos` after `klab up`) sees everything the
// first one made. Cached values are only shortcuts to what Docker holds.
//
// Docker can cut a container off a network, but not cut the link between
// two containers of the same network. A partition therefore disconnects
// every node of one side from the cluster network, which also cuts the
// nodes of that side off from each other; see Runtime.Partition.
//
// All images come from the klab binary itself (see EnsureImage): the engine
// is never asked to pull anything.
package docker

// Name is the runtime's name.
const Name = "docker"
