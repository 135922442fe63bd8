// Package inprocess is the local runtime's container runtime: it implements
// cri.Runtime by running every container as the klab app (cluster/app)
// inside the klab process, the way containerd runs a container as a process
// on the node.
//
// A pod's sandbox is its network identity: a loopback address of its own,
// taken from the node's pod CIDR (Linux routes all of 127.0.0.0/8 to the
// loopback interface, so 127.X.Y.0/24 gives a node 253 pod IPs without any
// configuration). Addresses are handed out in turn, as the host-local IPAM
// plugin does, so an address a deleted pod released is reused last; each is
// checked to be bindable before it is given out.
//
// A container is one run of app.Run in a goroutine. What the kernel and the
// container engine do to a real process, the runtime does to it:
//   - StopContainer cancels its context (SIGTERM), waits up to the grace
//     period, then closes its kill channel (SIGKILL): exit code 137, reason
//     Error;
//   - the app tells its memory accounter before it allocates; past the
//     container's memory limit (or the node's memory), the allocation is
//     refused and the app stops at once: exit code 137, reason OOMKilled;
//   - a command naming one of the shell's tools (`sh -c ...`, `sleep
//     3600`) runs in klab's shell, as the tools linked in klab/app's /bin
//     do in Docker; any other command klab/app cannot run fails the start
//     as containerd does: reason StartError, exit code 128, and a message
//     saying what the image contains. Otherwise a container's process is
//     the app: a Job's pod runs it with --exit-after (and --exit-code).
//
// Exec runs klab's shell (cluster/app/shell: mvdan.cc/sh with the everyday
// tools built in) in the klab process, over the pod's filesystem: a
// directory per pod under RootDir, which its containers share, holding
// /etc/hosts, /etc/resolv.conf and /etc/hostname as the kubelet writes
// them, and /tmp. Its ps shows the app as PID 1 and the exec'd commands;
// its kill signals them (kill 1 stops the app as SIGTERM would). Attach
// passes on the app's output from the moment it attaches.
//
// Images: klab runs offline. The node has klab/app under every tag (the same
// program; the app reports the tag as its version, so a rolling update from
// klab/app:v1 to klab/app:v2 shows the change) and klab/node under every
// tag; any other image is absent and PullImage says so. For the tutorial
// images of package cluster/app/standin the kubelet asks for a stand-in
// (ContainerConfig.StandIn): nginx and httpd run the app serving a welcome
// page on port 80 (binding it needs root or CAP_NET_BIND_SERVICE on the
// machine), busybox, alpine and ubuntu run the pod's command line in
// klab's shell as the container's process.
//
// Logs are written as a CRI runtime writes them, one file per container
// attempt under <LogDir>/<namespace>_<pod>_<uid>/<container>/<attempt>.log,
// every line as "<RFC3339Nano time> <stream> <F|P> <text>", rotated once
// at a size bound. Exited containers and their logs stay until
// RemoveContainer, so `kubectl logs --previous` works.
//
// Stats: a container's CPU usage is the CPU time its app measured on its
// own thread for the work it was told to do (--cpu-per-request), and its
// memory working set what it allocated on purpose; the node's usage is
// the klab process's, from /proc/self.
//
// What this runtime does not do: CPU limits are recorded but not enforced,
// and pods are not isolated from each other beyond their addresses.
package inprocess
