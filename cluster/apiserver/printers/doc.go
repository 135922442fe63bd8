// Package printers is the API server's side of `kubectl get`: it turns stored
// objects into a meta.k8s.io/v1 Table.
//
// Since Kubernetes 1.11 kubectl does not know how to lay out a Pod or a
// Deployment. It sends
//
//	Accept: application/json;as=Table;v=v1;g=meta.k8s.io
//
// and the server answers with column definitions and one row of cells per
// object; kubectl only aligns what it is given and hides the columns whose
// Priority is not 0 unless the user asked for `-o wide`. So the words a student
// reads under STATUS (CrashLoopBackOff, Init:0/1, Terminating, SchedulingGated)
// are chosen here, by the same rules kube-apiserver uses in
// k8s.io/kubernetes/pkg/printers/internalversion/printers.go.
//
// As in kube-apiserver, every row carries all the cells, wide ones included,
// and a type without a printer of its own gets the generic table of the
// apiserver library: NAME and CREATED AT.
//
// kube-apiserver prints the internal form of an object, reached by converting
// the versioned one. Where that conversion changes what is printed, this
// package applies the same rule to the k8s.io/api type directly: a pod's
// status.podIP wins over status.podIPs, a Secret's stringData counts as data,
// an events.k8s.io Event prints as the core Event it converts to. An optional
// field that defaulting would have filled (a Deployment's spec.replicas) is
// read as the conversion reads it, nil as zero: objects reaching this package
// are expected to be defaulted, as every object kube-apiserver stores is.
package printers
