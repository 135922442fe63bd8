package garbagecollector

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// attemptToDeleteItem decides the fate of one object from its live state
// (never from the graph alone, which may lag):
//   - an owner deleting its dependents in the foreground loses its
//     foregroundDeletion finalizer once no blocking dependent is left;
//   - an object with a live owner stays, but references to owners that are
//     gone (or waiting for their dependents to go) are removed from it;
//   - an object whose every owner is gone is deleted, in the foreground if
//     an owner waits for it and it has dependents of its own.
func (gc *GarbageCollector) attemptToDeleteItem(ctx context.Context, item *node) error {
	// Being deleted is a one-way trip: wait for the deletion, then its
	// dependents are handled.
	if item.isBeingDeleted() && !item.isDeletingDependents() {
		return nil
	}
	identity := item.getIdentity()
	latest, err := gc.getObject(ctx, identity)
	switch {
	case apierrors.IsNotFound(err):
		// Also how a virtual node found absent leaves the graph.
		gc.enqueueVirtualDeleteEvent(identity)
		return errEnqueuedVirtualDelete
	case err != nil:
		return err
	case latest.GetUID() != identity.UID:
		// Same name, another object: the one we knew is gone.
		gc.enqueueVirtualDeleteEvent(identity)
		return errEnqueuedVirtualDelete
	}

	if item.isDeletingDependents() {
		return gc.processDeletingDependentsItem(ctx, item)
	}
	owners := latest.GetOwnerReferences()
	if len(owners) == 0 {
		return nil
	}
	solid, dangling, waiting, err := gc.classifyReferences(ctx, item, owners)
	if err != nil {
		return err
	}

	switch {
	case len(solid) != 0:
		if len(dangling) == 0 && len(waiting) == 0 {
			return nil
		}
		// A live owner keeps the object. References to absent owners go;
		// so do references to owners waiting for their dependents, or they
		// would wait forever for an object that is not going away.
		uids := append(ownerUIDs(dangling), ownerUIDs(waiting)...)
		gc.logger.Debug("Removing dangling and waiting owner references", "item", identity.String(), "owners", uids)
		return gc.patchObject(ctx, identity, types.StrategicMergePatchType, deleteOwnerRefPatch(identity.UID, uids...))

	case len(waiting) != 0 && len(item.getDependents()) != 0:
		for _, dep := range item.getDependents() {
			if dep.isDeletingDependents() {
				// An owner and a dependent of this object both wait for
				// their dependents: a possible cycle. Stop this object from
				// blocking its owners before deleting it in the foreground.
				gc.logger.Info("Unblocking owner references to break a possible cycle", "item", identity.String())
				if err := gc.patchObject(ctx, identity, types.StrategicMergePatchType, unblockOwnerRefsPatch(identity.UID, owners)); err != nil {
					return err
				}
				break
			}
		}
		// An owner waits for this object, which has dependents itself:
		// delete it in the foreground too, so the wait covers them.
		policy := metav1.DeletePropagationForeground
		gc.logger.Info("Deleting item", "item", identity.String(), "propagationPolicy", policy)
		return gc.deleteObject(ctx, identity, latest.GetResourceVersion(), &policy)

	default:
		// No live owner: collect it, honouring a propagation its own
		// finalizers already ask for.
		policy := metav1.DeletePropagationBackground
		switch {
		case hasFinalizer(latest, metav1.FinalizerOrphanDependents):
			policy = metav1.DeletePropagationOrphan
		case hasFinalizer(latest, metav1.FinalizerDeleteDependents):
			policy = metav1.DeletePropagationForeground
		}
		gc.logger.Info("Deleting item", "item", identity.String(), "propagationPolicy", policy)
		return gc.deleteObject(ctx, identity, latest.GetResourceVersion(), &policy)
	}
}

// classifyReferences sorts an object's owner references: solid (the owner
// exists and is not deleting its dependents), dangling (the owner is gone
// or is another object now), and waiting (the owner is being deleted in
// the foreground).
func (gc *GarbageCollector) classifyReferences(ctx context.Context, item *node, refs []metav1.OwnerReference) (solid, dangling, waiting []metav1.OwnerReference, err error) {
	for _, ref := range refs {
		isDangling, owner, err := gc.isDangling(ctx, ref, item)
		if err != nil {
			return nil, nil, nil, err
		}
		switch {
		case isDangling:
			dangling = append(dangling, ref)
		case owner.GetDeletionTimestamp() != nil && hasFinalizer(owner, metav1.FinalizerDeleteDependents):
			waiting = append(waiting, ref)
		default:
			solid = append(solid, ref)
		}
	}
	return solid, dangling, waiting, nil
}

// isDangling looks the owner up live (through the absent-owner cache). An
// owner is absent when it is not found or has another UID.
func (gc *GarbageCollector) isDangling(ctx context.Context, ref metav1.OwnerReference, item *node) (bool, *metav1.PartialObjectMetadata, error) {
	itemNamespace := item.getIdentity().Namespace
	// Known absent, as a cluster-scoped or as a namespaced owner.
	if _, ok := gc.absentOwnerCache.Get(ownerIdentity(ref, "")); ok {
		return true, nil, nil
	}
	if _, ok := gc.absentOwnerCache.Get(ownerIdentity(ref, itemNamespace)); ok {
		return true, nil, nil
	}
	r, err := gc.mapper.resourceFor(ref.APIVersion, ref.Kind)
	if err != nil {
		return false, nil, err
	}
	namespace := itemNamespace
	if !r.Namespaced {
		namespace = ""
	} else if itemNamespace == "" {
		// A cluster-scoped object cannot have a namespaced owner: the
		// reference is unresolvable, and the object is never collected.
		return false, nil, errNamespacedOwnerOfClusterScopedObject
	}
	absent := ownerIdentity(ref, namespace)
	owner, err := gc.metadataClient.Resource(r.GroupVersionResource).Namespace(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		gc.absentOwnerCache.Add(absent, nil)
		return true, nil, nil
	case err != nil:
		return false, nil, fmt.Errorf("get owner %s: %w", absent, err)
	case owner.GetUID() != ref.UID:
		gc.absentOwnerCache.Add(absent, nil)
		return true, nil, nil
	}
	return false, owner, nil
}

// processDeletingDependentsItem finishes a foreground deletion once no
// dependent blocks it, and otherwise makes sure its blocking dependents
// are being deleted.
func (gc *GarbageCollector) processDeletingDependentsItem(ctx context.Context, item *node) error {
	blocking := item.blockingDependents()
	if len(blocking) == 0 {
		gc.logger.Debug("Removing DeleteDependents finalizer", "item", item.getIdentity().String())
		return gc.removeFinalizer(ctx, item, metav1.FinalizerDeleteDependents)
	}
	for _, dep := range blocking {
		if !dep.isDeletingDependents() {
			gc.attemptToDelete.Add(dep)
		}
	}
	return nil
}

// attemptToOrphanItem removes the owner's reference from each of its
// dependents, then the orphan finalizer from the owner, which lets the API
// server delete it.
func (gc *GarbageCollector) attemptToOrphanItem(ctx context.Context, owner *node) error {
	identity := owner.getIdentity()
	var errs []error
	for _, dep := range owner.getDependents() {
		depID := dep.getIdentity()
		err := gc.patchObject(ctx, depID, types.StrategicMergePatchType, deleteOwnerRefPatch(depID.UID, identity.UID))
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("orphaning %s failed: %w", depID, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return gc.removeFinalizer(ctx, owner, metav1.FinalizerOrphanDependents)
}

func ownerUIDs(refs []metav1.OwnerReference) []types.UID {
	out := make([]types.UID, 0, len(refs))
	for _, ref := range refs {
		out = append(out, ref.UID)
	}
	return out
}
