// Package app is klab's demo workload: the program every pod runs unless its
// manifest names another image (image klab/app). It is a small HTTP server
// that tells a student which pod answered, and that can be told to misbehave
// in the ways Kubernetes lessons need: fail its probes, crash, answer slowly,
// or eat memory until it is OOM-killed.
//
// # Endpoints
//
//	GET  /         who answered: pod, namespace, node, pod IP, image, version
//	               and a request counter; plain text, or JSON with
//	               ?format=json or "Accept: application/json"
//	GET  /healthz  liveness: 200 "ok", or 500 once a liveness switch fires
//	GET  /readyz   readiness: 200 "ok", or 503 while not ready
//	GET  /env      the environment, one KEY=VALUE per line (or JSON)
//	POST /fail     make /readyz fail until POST /recover
//	POST /recover  undo POST /fail
//	POST /crash    exit at once with the crash exit code (or ?code=N)
//
// The request counter counts answers to GET / only, so probes do not move
// it; the "after N requests" switches count the same requests.
//
// # Switches
//
// Every switch is a flag and an environment variable: the variable's name is
// the flag's in upper case with dashes turned into underscores
// (--fail-liveness-after and FAIL_LIVENESS_AFTER). Flags suit `klab component
// app` in a container; variables suit a pod manifest's env. A flag wins over
// its variable. Durations take Go's syntax ("1m30s") or a plain number of
// seconds ("90"); sizes take Kubernetes quantities ("64Mi", "1G"). A
// duration, count or size left at 0 switches its behaviour off.
//
//	--port                           port to listen on (8080)
//	--message                        a line added to every answer to GET /
//	--response-delay                 wait this long before answering GET /
//	--cpu-per-request                keep a CPU busy for this much CPU time per GET /
//	--ready-after                    /readyz fails until this long after start
//	--fail-liveness-after            /healthz fails from this long after start
//	--fail-liveness-after-requests   /healthz fails once GET / answered N times
//	--fail-readiness-after           /readyz fails from this long after start
//	--fail-readiness-after-requests  /readyz fails once GET / answered N times
//	--crash-after                    exit with --crash-exit-code after this long
//	--crash-exit-code                code for --crash-after and POST /crash (1)
//	--exit-after                     exit with --exit-code after this long: a
//	                                 batch job that finishes (with 0, Completed)
//	--exit-code                      code for --exit-after (0)
//	--shutdown-delay                 on SIGTERM, fail readiness and keep serving
//	                                 this long before shutting down (draining)
//	--memory                         allocate this much memory at start
//	--memory-grow                    allocate this much more every interval
//	--memory-grow-interval           the interval for --memory-grow (1s)
//	--log-requests                   log one line per request (true)
//
// Memory asked for is really allocated and every page of it written, so a
// container runtime that enforces a memory limit (a cgroup) sees it and
// OOM-kills the app. It is allocated a mebibyte at a time, so the app grows
// past a limit the way a leaking program does rather than in one jump.
//
// # Identity
//
// The app learns who it is from environment variables, as a pod would from
// the Downward API (fieldRef metadata.name, metadata.namespace,
// spec.nodeName and status.podIP); klab's kubelet sets them in every
// container:
//
//	POD_NAME       the pod's name (falls back to HOSTNAME, which container
//	               runtimes set to the pod's hostname)
//	POD_NAMESPACE  the pod's namespace
//	NODE_NAME      the node's name
//	POD_IP         the pod's IP (falls back to the address it listens on)
//	KLAB_IMAGE     the image the container runs, set by the container
//	               runtime; its tag is reported as the app's version, so
//	               klab/app:v1 and klab/app:v2 (the same program) tell a
//	               rolling update's old and new pods apart
//
// # Lifecycle and exit codes
//
// Run blocks until the app exits and returns its exit code: 0 after a
// graceful shutdown (the context is cancelled, as SIGTERM does) or a
// finished --exit-after; the crash exit code after --crash-after or POST
// /crash; 1 when it cannot listen; 2 for bad flags or variables; 137 (128 +
// SIGKILL) when it is killed (Options.Kill) or its memory accounter refuses
// an allocation, as a process the kernel's OOM killer picks.
package app
