package garbagecollector

import (
	"fmt"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
)

type eventType int

const (
	addEvent eventType = iota
	updateEvent
	deleteEvent
	// barrierEvent carries no object: processing it closes done, which
	// tells that every event queued before it has been applied.
	barrierEvent
)

// event is one informer notification (or a virtual deletion found by a
// worker) for the graph builder.
type event struct {
	eventType eventType
	// virtual marks a deletion found by a lookup, not seen by an informer;
	// identity is what was looked up.
	virtual  bool
	identity objectReference
	resource resource
	obj      metav1.Object
	oldObj   metav1.Object
	done     chan struct{}
}

// addMonitor registers the graph builder's handlers on the metadata
// informer of r. Handlers only queue events; processGraphChanges alone
// changes the graph, one event at a time in the order they happened.
func (gc *GarbageCollector) addMonitor(informer cache.SharedIndexInformer, r resource) (cache.ResourceEventHandlerRegistration, error) {
	return informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if m, ok := accessor(obj); ok {
				gc.graphChanges.Add(&event{eventType: addEvent, resource: r, obj: m})
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			m, ok := accessor(newObj)
			old, oldOK := accessor(oldObj)
			if ok && oldOK {
				gc.graphChanges.Add(&event{eventType: updateEvent, resource: r, obj: m, oldObj: old})
			}
		},
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if m, ok := accessor(obj); ok {
				gc.graphChanges.Add(&event{eventType: deleteEvent, resource: r, obj: m})
			}
		},
	})
}

func accessor(obj any) (metav1.Object, bool) {
	m, err := meta.Accessor(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("cannot access obj: %w", err))
		return nil, false
	}
	return m, true
}

// enqueueVirtualDeleteEvent tells the graph builder that a lookup found
// the object gone, before (or instead of) an informer saying so.
func (gc *GarbageCollector) enqueueVirtualDeleteEvent(ref objectReference) {
	gc.graphChanges.Add(&event{
		eventType: deleteEvent,
		virtual:   true,
		identity:  ref,
		obj:       &metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID},
	})
}

func (gc *GarbageCollector) runProcessGraphChanges() {
	for gc.processGraphChanges() {
	}
}

// processGraphChanges applies one event to the graph and queues the work
// it makes: owners whose dependents must go, dependents whose owner went.
func (gc *GarbageCollector) processGraphChanges() bool {
	ev, quit := gc.graphChanges.Get()
	if quit {
		return false
	}
	defer gc.graphChanges.Done(ev)
	if ev.eventType == barrierEvent {
		close(ev.done)
		return true
	}
	obj := ev.obj
	existing, found := gc.uidToNode.read(obj.GetUID())
	if found && !ev.virtual && !existing.isObserved() {
		// An owner first known from a dependent's reference is now seen,
		// with its real coordinates.
		existing.markObserved(gc.identityFromEvent(ev))
	}

	switch {
	case (ev.eventType == addEvent || ev.eventType == updateEvent) && !found:
		n := newNode(gc.identityFromEvent(ev), obj.GetOwnerReferences())
		n.beingDeleted = obj.GetDeletionTimestamp() != nil
		n.deletingDependents = n.beingDeleted && hasFinalizer(obj, metav1.FinalizerDeleteDependents)
		gc.insertNode(n)
		// An informer may fold a create and a delete into one event.
		gc.processTransitions(ev.oldObj, obj, n)

	case ev.eventType == addEvent || ev.eventType == updateEvent:
		added, removed, changed := referencesDiffs(existing.getOwners(), obj.GetOwnerReferences())
		if len(added) != 0 || len(removed) != 0 || len(changed) != 0 {
			// An owner waiting for this dependent may now go on.
			gc.addUnblockedOwnersToDeleteQueue(removed, changed)
			existing.setOwners(obj.GetOwnerReferences())
			gc.addDependentToOwners(existing, added)
			gc.removeDependentFromOwners(existing, removed)
		}
		if obj.GetDeletionTimestamp() != nil {
			existing.markBeingDeleted()
		}
		gc.processTransitions(ev.oldObj, obj, existing)

	case ev.eventType == deleteEvent:
		if !found {
			return true
		}
		if ev.virtual && existing.isObserved() && existing.getIdentity() != ev.identity {
			// A lookup under other coordinates than those an informer
			// showed proves nothing about the object itself.
			return true
		}
		gc.removeNode(existing)
		dependents := existing.getDependents()
		if len(dependents) > 0 {
			gc.absentOwnerCache.Add(existing.getIdentity(), nil)
		}
		for _, dep := range dependents {
			gc.attemptToDelete.Add(dep)
		}
		for _, ref := range existing.getOwners() {
			if owner, ok := gc.uidToNode.read(ref.UID); ok && owner.isDeletingDependents() {
				// The owner may have been waiting for this dependent.
				gc.attemptToDelete.Add(owner)
			}
		}
	}
	return true
}

// identityFromEvent is the identity an informer event shows.
func (gc *GarbageCollector) identityFromEvent(ev *event) objectReference {
	return objectReference{
		APIVersion: ev.resource.GroupVersion().String(),
		Kind:       ev.resource.Kind,
		Name:       ev.obj.GetName(),
		UID:        ev.obj.GetUID(),
		Namespace:  ev.obj.GetNamespace(),
	}
}

func (gc *GarbageCollector) insertNode(n *node) {
	gc.uidToNode.write(n)
	gc.addDependentToOwners(n, n.getOwners())
}

// addDependentToOwners links n to its owners. An owner not in the graph
// gets a virtual node, queued for a lookup that tells whether it exists.
func (gc *GarbageCollector) addDependentToOwners(n *node, owners []metav1.OwnerReference) {
	identity := n.getIdentity()
	for _, ref := range owners {
		owner, ok := gc.uidToNode.read(ref.UID)
		if !ok {
			owner = newNode(ownerIdentity(ref, identity.Namespace), nil)
			owner.virtual = true
			gc.uidToNode.write(owner)
		}
		owner.addDependent(n)
		if !ok {
			gc.attemptToDelete.Add(owner)
			continue
		}
		if oid := owner.getIdentity(); owner.isObserved() && oid.Namespace != "" && oid.Namespace != identity.Namespace {
			// A namespaced owner in another namespace: the reference can
			// never resolve. Say so, and let a worker treat it as absent.
			gc.reportInvalidNamespaceOwnerRef(n, ref)
			gc.attemptToDelete.Add(n)
		}
	}
}

func (gc *GarbageCollector) reportInvalidNamespaceOwnerRef(n *node, ref metav1.OwnerReference) {
	id := n.getIdentity()
	obj := &corev1.ObjectReference{Kind: id.Kind, APIVersion: id.APIVersion, Namespace: id.Namespace, Name: id.Name, UID: id.UID}
	gc.recorder.Eventf(obj, corev1.EventTypeWarning, "OwnerRefInvalidNamespace", "ownerRef %s does not exist in namespace %q",
		ownerIdentity(ref, id.Namespace), id.Namespace)
}

func (gc *GarbageCollector) removeDependentFromOwners(n *node, owners []metav1.OwnerReference) {
	for _, ref := range owners {
		if owner, ok := gc.uidToNode.read(ref.UID); ok {
			owner.deleteDependent(n)
		}
	}
}

func (gc *GarbageCollector) removeNode(n *node) {
	gc.uidToNode.delete(n.getIdentity().UID)
	gc.removeDependentFromOwners(n, n.getOwners())
}

// ownerRefPair is an owner reference before and after an update.
type ownerRefPair struct {
	oldRef, newRef metav1.OwnerReference
}

// referencesDiffs compares owner references by UID.
func referencesDiffs(old, cur []metav1.OwnerReference) (added, removed []metav1.OwnerReference, changed []ownerRefPair) {
	oldByUID := make(map[string]metav1.OwnerReference, len(old))
	for _, ref := range old {
		oldByUID[string(ref.UID)] = ref
	}
	for _, ref := range cur {
		prev, ok := oldByUID[string(ref.UID)]
		if !ok {
			added = append(added, ref)
			continue
		}
		if !reflect.DeepEqual(prev, ref) {
			changed = append(changed, ownerRefPair{oldRef: prev, newRef: ref})
		}
		delete(oldByUID, string(ref.UID))
	}
	for _, ref := range old {
		if _, gone := oldByUID[string(ref.UID)]; gone {
			removed = append(removed, ref)
		}
	}
	return added, removed, changed
}

// addUnblockedOwnersToDeleteQueue queues the owners a dependent stopped
// blocking, by dropping its reference or its blockOwnerDeletion.
func (gc *GarbageCollector) addUnblockedOwnersToDeleteQueue(removed []metav1.OwnerReference, changed []ownerRefPair) {
	blocks := func(ref metav1.OwnerReference) bool { return ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion }
	for _, ref := range removed {
		if blocks(ref) {
			if owner, ok := gc.uidToNode.read(ref.UID); ok {
				gc.attemptToDelete.Add(owner)
			}
		}
	}
	for _, c := range changed {
		if blocks(c.oldRef) && !blocks(c.newRef) {
			if owner, ok := gc.uidToNode.read(c.newRef.UID); ok {
				gc.attemptToDelete.Add(owner)
			}
		}
	}
}

// processTransitions starts the work a deletion asks for when it begins:
// orphaning the dependents, or deleting them first.
func (gc *GarbageCollector) processTransitions(oldObj, newObj metav1.Object, n *node) {
	if deletionStartsWithFinalizer(oldObj, newObj, metav1.FinalizerOrphanDependents) {
		gc.attemptToOrphan.Add(n)
		return
	}
	if deletionStartsWithFinalizer(oldObj, newObj, metav1.FinalizerDeleteDependents) {
		// A node that started virtual has no deletingDependents yet.
		n.markDeletingDependents()
		for _, dep := range n.getDependents() {
			gc.attemptToDelete.Add(dep)
		}
		gc.attemptToDelete.Add(n)
	}
}

// deletionStartsWithFinalizer reports whether newObj is being deleted with
// finalizer while oldObj (if any) was not.
func deletionStartsWithFinalizer(oldObj, newObj metav1.Object, finalizer string) bool {
	if newObj.GetDeletionTimestamp() == nil || !hasFinalizer(newObj, finalizer) {
		return false
	}
	if oldObj == nil {
		return true
	}
	return oldObj.GetDeletionTimestamp() == nil || !hasFinalizer(oldObj, finalizer)
}

func hasFinalizer(obj metav1.Object, finalizer string) bool {
	return slices.Contains(obj.GetFinalizers(), finalizer)
}
