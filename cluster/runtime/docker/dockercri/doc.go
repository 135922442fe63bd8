// Package dockercri is the Docker runtime's container runtime: it
// implements cri.Runtime for a kubelet that runs in a container on the
// cluster's Docker network, with the engine's socket mounted, the way the
// kubelet's dockershim once drove Docker on a real node.
//
// A pod's sandbox is a pause container: it holds the pod's network
// namespace, on the cluster network at a fixed address from the node's pod
// CIDR, and does nothing else (klab's pause image is the klab binary, run as
// `klab component pause`, which sleeps until SIGTERM). The address is the
// first one from .2 upward that no running sandbox of the node holds; a
// stopped sandbox has let go of its address, so stopping releases it, as
// the CRI asks. Every container of the pod joins the sandbox's network
// namespace ("container:<sandbox id>"), so they share the pod IP and reach
// each other on localhost.
//
// Names follow dockershim's, "klab-<cluster>_k8s_<container>_<pod>_
// <namespace>_<uid>_<attempt>" (container POD for the sandbox), so that
// `docker ps` on the machine reads as it did on a Docker node. The runtime
// finds its objects by label only (cluster, node, role; see
// cluster/runtime/docker/labels) and keeps no state of its own: pods outlive
// a kubelet restart, and a new Runtime finds them again. For the same
// reason Close leaves the pods running, unlike the in-process runtime whose
// containers live in the kubelet's process; klab's Docker runtime removes
// a node's pods with the node.
//
// What the engine does is reported as the in-process runtime reports it:
// a container killed for exceeding its memory limit exits with code 137 and
// reason OOMKilled (Docker's State.OOMKilled); any other exit is Completed
// (code 0) or Error; a container the engine could not start (a command the
// image does not have) is exited with reason StartError and Docker's
// message. Logs are Docker's own (json-file, rotated once at 10 MiB as
// upstream's containerLogMaxSize), read back with Docker's timestamps and
// written as `kubectl logs` shows them. Lifecycle events come from the
// engine's event stream, reconnected with back-off if it breaks.
//
// Images: PullImage asks the engine to pull, as the kubelet's image
// service asks containerd; a failure gives the engine's message and what
// to do offline. klab's own images are never pulled: they are built on the
// machine, and the workload image answers to every tag as in the
// in-process runtime (klab/app:v2 is klab/app:latest tagged anew). A
// container with a stand-in (cri.ContainerConfig.StandIn, package
// cluster/app/standin) runs from the workload image: the app serving a
// welcome page on port 80, or the pod's command line, whose sh, sleep and
// other tools are the image's links to klab's shell.
package dockercri
