// Package lab is the cluster as a whole: it decides what runs where and in
// what order, and gives the CLI and the TUI one place to bring a cluster
// up, act on it, watch it and take it away. The components themselves
// live in their own packages (cluster/etcd, cluster/apiserver, ...) and
// run on a runtime (cluster/runtime/local in-process, cluster/runtime/docker
// in containers); lab knows them only through their specs.
//
// # Coming up
//
// A cluster is described by a Spec: its name, masters, workers, speed and
// runtime. Up checks the spec, resolves the runtime ("auto" is Docker when
// an engine answers), takes the cluster's state dir and control socket,
// and then runs upSteps (lifecycle.go), one table of steps in kubeadm's
// order: the node image (Docker), the nodes, the load balancer's node when
// there are several masters, the etcd members and their first leader, the
// PKI (package cluster/pki), the API servers and the load balancer, the
// kubeconfigs, the schedulers and controller managers, a kubelet and a
// kube-proxy on every node, the wait for every node to be Ready, and
// cluster.json. A step either does its own work (run), or names the
// components it runs and on which nodes (on, components), in which case
// the runner creates and starts them and they join the cluster's topology:
// what chaos targets and status name. Adding a step is adding its row and
// writing its function.
//
// One runner (bringUp.run in steps.go) runs the table, reporting each
// step to a Progress as started, then done or failed with its duration:
// the CLI prints ✓ and ✗ lines, the TUI draws them on its home screen.
// Each step that makes something pushes how to undo it onto one cleanup
// stack; if a later step fails, the stack is unwound, last made first
// (components and nodes, the PKI, the kubeconfigs, the state dir of a new
// cluster), unless Options.Retain keeps the wreck for debugging.
//
// The same table brings a kept cluster back. Up on a state dir whose
// cluster.json has the same shape (klab down --keep-data, or a `klab up`
// stopped with Ctrl-C) makes the nodes again at their addresses, on their
// data; Start starts a stopped Docker cluster, whose components exist and
// are only started. A lesson step that needs another shape removes the
// cluster and runs Up again in the new shape.
//
// # Running
//
// A local cluster runs inside the `klab up` process (or the TUI) that
// brought it up, until Close. Other processes reach it through the control
// socket in its state dir (control.go: status, chaos, shutdown), which also
// keeps a second `klab up` off it. A Docker cluster lives in its containers:
// once up it needs no process, and other processes Attach to it through the
// engine. Either way, cluster.json (statedir.go) says where everything
// answers: the etcd members' client and debug URLs, the API servers, the
// kubeconfig.
//
// Chaos operations (chaos.go) kill, restart, pause and resume components
// and partition and heal the network, on targets named as a user writes
// them ("etcd-2", "master-2/kube-apiserver", "leader"). The Observer
// (observer.go) follows every member's event stream and status, as any
// client could, and merges them into the one ordered stream of
// observations the TUI and lesson checks read.
//
// # Going away
//
// Close stops a local cluster's components gracefully and keeps their
// data; Stop does the same to a Docker cluster's containers, for Start.
// Down stops the cluster if a `klab up` process runs it and removes
// everything: its Docker objects, found by label, and its state dir.
package lab
