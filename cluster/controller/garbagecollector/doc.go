// Package garbagecollector is the garbage collector of klab's
// kube-controller-manager, as upstream's pkg/controller/garbagecollector.
//
// Objects name their owners in metadata.ownerReferences: a ReplicaSet owns
// its pods, a Service its EndpointSlices, a Node its Lease. The collector
// watches the metadata of every resource klab serves and keeps a graph of
// owners and dependents (the graph builder, fed one informer event at a
// time). Workers act on what the graph points at, but decide only from a
// live read of the object and its owners, since the graph may lag:
//
//   - Background deletion (the default): an object is deleted right away;
//     when the graph sees it go, its dependents are checked, and a
//     dependent whose every owner is gone is deleted. A dependent with
//     another live owner only loses the reference to the dead one.
//   - Foreground deletion: the API server marks the owner deleted and gives
//     it the foregroundDeletion finalizer. The collector deletes its
//     dependents (in the foreground too, if they have dependents of their
//     own) and removes the finalizer once no dependent with
//     blockOwnerDeletion is left; then the API server deletes the owner.
//   - Orphan: the owner gets the orphan finalizer. The collector removes
//     the owner's reference from each dependent, then the finalizer.
//
// An owner only known from a reference starts as a virtual node; a lookup
// tells whether it exists, and if not its dependents are collected.
package garbagecollector
