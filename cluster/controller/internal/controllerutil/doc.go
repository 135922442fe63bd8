// Package controllerutil holds what klab's controllers share, as
// upstream's pkg/controller does for kube-controller-manager:
//
//   - the worker loop of a queue-driven controller (Worker, Loop) and the
//     registration of its informer handlers, sample-controller's shape,
//     which every controller had written out for itself;
//   - expectations, so that a sync does not create or delete a second time
//     before the informer has shown it the first creates and deletes;
//   - the pod control, which creates, deletes and patches pods and records
//     the SuccessfulCreate / SuccessfulDelete events;
//   - the ControllerRef manager, which adopts matching orphans and releases
//     owned objects that no longer match the selector;
//   - the ordering that decides which pods go first on scale-down;
//   - the pod-template hash that names a Deployment's ReplicaSets and
//     labels a DaemonSet's pods.
//
// All but the first serve the workload controllers (replicaset,
// deployment, daemonset, job). Names follow upstream's so that a student reading one
// can find the other.
package controllerutil
