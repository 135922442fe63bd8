// Package defaults fills in the fields an API request left empty, the way
// kube-apiserver does before it validates and stores an object.
//
// Upstream, an object picks up its defaults in four places, and a student who
// runs `kubectl get pod -o yaml` sees the sum of all four:
//
//  1. The defaulting functions of each API version, run when a request body is
//     decoded: pkg/apis/core/v1/defaults.go, pkg/apis/apps/v1/defaults.go,
//     pkg/apis/batch/v1/defaults.go, pkg/apis/discovery/v1/defaults.go. They
//     set restartPolicy Always, imagePullPolicy, probe timings, Deployment
//     replicas 1, and so on.
//  2. The defaults generated from `+default=` markers in k8s.io/api's types.go
//     (zz_generated.defaults.go), such as protocol TCP on every port.
//  3. The resource strategies (pkg/registry/<group>/<resource>/strategy.go),
//     which set what a create always starts with: a new Pod's phase Pending
//     and its QoS class, a Job's generated selector, a Service's clusterIPs.
//  4. Admission plugins, such as Priority, which sets preemptionPolicy.
//
// Default does the parts of 1–4 that klab's API server needs, in one call per
// object, and nothing else: it never allocates (ClusterIPs and NodePorts come
// from package allocator), never bumps metadata.generation, and never clears a
// field a user set. It is safe to call on every create and update: a field
// that already has a value keeps it, so calling Default twice changes nothing
// the second time.
//
// What is left out, on purpose: defaults for volume types a lab cannot mount
// (iSCSI, RBD, Azure disks, ScaleIO), pod-level resources (spec.resources),
// the admission plugins that look at other objects (ServiceAccount, which sets
// serviceAccountName "default"; DefaultTolerationSeconds, which adds the
// not-ready and unreachable tolerations; the priority value the Priority
// plugin resolves from a PriorityClass), a Namespace's "kubernetes" finalizer
// (added only on create, by the namespace strategy, so it must not come back
// on every update) and a DaemonSet's template generation.
package defaults
