// Package kubelet is klab's node agent: it registers its node, keeps it
// alive in the API server, and runs the pods the scheduler binds to it
// through a container runtime (package cri). It follows the shape of
// upstream's pkg/kubelet, cut down to what a lab shows.
//
// # Registration and heartbeats
//
// Start binds the HTTPS port and registers the Node: the labels upstream's
// kubelet sets (kubernetes.io/hostname, os, arch; on masters the
// control-plane NoSchedule taint, whose label the NodeRestriction
// admission plugin leaves to the administrator), capacity and allocatable, the
// InternalIP and Hostname addresses, the kubelet port, nodeInfo, the pod
// CIDR, the images the runtime holds and the conditions (MemoryPressure,
// DiskPressure and PIDPressure False, Ready True with KubeletReady). A node
// that exists already (the kubelet restarted) is updated instead.
//
// From then on the kubelet sends two heartbeats, as upstream since the
// node Lease feature: the Lease kube-node-lease/<node>, renewed every
// node-lease-renew-interval (10 s), is the cheap one the node lifecycle
// controller watches; the node status is written when it changes and at
// least every node-status-update-frequency, each condition's
// lastHeartbeatTime renewed. Both intervals are divided by the lab's speed.
//
// # Pod workers
//
// An informer watches the pods whose spec.nodeName is this node. Its
// handlers only hand each pod to its worker: one goroutine per pod
// (upstream's pod workers), so that a pod pulling an image never holds
// up another. A worker syncs its pod whenever the pod changes, a
// container of it starts or exits (the runtime's events; a relist every
// 2 s catches anything missed), a probe result flips, or a back-off ends.
//
// A sync is level-triggered and safe to repeat: it reads what the runtime
// holds for the pod (found by the pod UID label, so a restarted kubelet
// adopts its pods), admits a new pod against the node's allocatable
// (OutOfcpu, OutOfmemory, OutOfpods), makes sure it has a sandbox (its
// IP), kills containers whose liveness or startup probe failed, runs the
// init containers one at a time, then starts or restarts the containers as
// the restart policy says: image pulls follow imagePullPolicy and back off
// (ErrImagePull, then ImagePullBackOff), unless klab has a stand-in for a
// tutorial image that could not be pulled (a StandIn event says it runs
// instead), crashing containers back off
// 10 s, 20 s, 40 s ... up to 5 min (CrashLoopBackOff), both divided by
// the speed. Environment variables are resolved from values, the pod's
// own fields, ConfigMaps and Secrets, followed by the service variables
// (enableServiceLinks); $(VAR) is expanded in them and in command and
// args. The pod's status is computed from the runtime
// (phase, conditions, container states) and written by the status
// manager only when it changed.
//
// # Probes
//
// Each running container's liveness, readiness and startup probes get a
// worker that probes over HTTP or TCP with the pod's own timings (never
// scaled): readiness feeds the Ready conditions; a failed liveness or
// startup probe makes the pod worker kill the container ("Container x
// failed liveness probe, will be restarted"), after which the restart
// policy applies. klab cannot run exec or grpc probes; they count as
// succeeding, and a ProbeWarning event says so.
//
// # Termination
//
// A pod with a deletionTimestamp is ended by its worker: its containers
// get the deletion's grace period to stop, the final status (Succeeded or
// Failed) is written, and the pod is deleted from the API for good (grace
// period 0, on the condition that its UID is unchanged), after which its
// sandbox and containers are removed. A pod that leaves the API without
// that (a forced deletion) is killed and removed; runtime pods that no API
// pod accounts for are orphans and are removed too. Stopping the kubelet
// leaves the pods running in the runtime, as a real kubelet restart does.
//
// # Static pods, HTTPS API
//
// The control-plane components of a master run outside the kubelet; the
// kubelet shows each as a mirror pod <component>-<node> in kube-system
// whose readiness and restart count follow the component's health URL.
// The HTTPS server serves /healthz, /containerLogs (what `kubectl logs`
// reaches through the API server), /exec, /attach and /portForward (what
// `kubectl exec`, `attach`, `cp` and `port-forward` reach: SPDY streams
// served by k8s.io/cri-streaming, the CRI streaming server's packages;
// exec and attach go to the runtime, port-forward connects to the pod's
// IP), /stats/summary (the Summary API's node and container CPU and
// memory, which metrics.k8s.io in the API server scrapes for `kubectl top`
// and the horizontal pod autoscaler) and klab's /debug/klab/status and /debug/klab/events, to users of
// group system:masters: a client certificate the cluster CA signed (the
// API server's) or a token, checked by a SelfSubjectReview against the
// API server.
package kubelet
