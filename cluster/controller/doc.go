// Package controller is klab's kube-controller-manager: the process that
// runs Kubernetes' reconcilers (node lifecycle, namespaces, service
// accounts, replica sets, ...) against the API server.
//
// Several managers run, one per master, but only one of them works: they
// compete for the Lease kube-system/kube-controller-manager with client-go's
// leader election, exactly as upstream does (identity "<node>_<uuid>",
// lease 15 s, renew deadline 10 s, retry 2 s, each divided by the lab's
// speed, though never a lease under one second, the Lease's unit). The
// winner builds the shared informers, a clientset, a metadata
// client and an event recorder, hands them to every controller's InitFunc,
// starts the informers and runs the controllers. A manager that loses the
// lease stops for good with the error "leaderelection lost" — upstream's
// process exits and is restarted — because controllers may still be
// acting on what they believed while another leader has already started.
//
// Like upstream, a manager that stops does not give the lease back
// (kube-controller-manager leaves ReleaseOnCancel unset; see
// kubernetes/kubernetes#132599): its successor waits until the lease
// expires, which is what a lesson about failover shows.
//
// Each manager serves a small debug HTTP endpoint: /healthz,
// /debug/klab/status (who leads, which controllers run, their queues and
// sync counts) and /debug/klab/events, a stream of leader changes and node
// lifecycle transitions as newline-delimited JSON.
package controller
