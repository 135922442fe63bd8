package garbagecollector

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// objectReference identifies an object by the coordinates an owner
// reference gives, plus its namespace.
type objectReference struct {
	APIVersion string
	Kind       string
	Name       string
	UID        types.UID
	Namespace  string
}

// String is upstream's form, which its event messages show.
func (r objectReference) String() string {
	return fmt.Sprintf("[%s/%s, namespace: %s, name: %s, uid: %s]", r.APIVersion, r.Kind, r.Namespace, r.Name, r.UID)
}

// ownerIdentity is the object an owner reference of a dependent in
// namespace points to. A namespaced owner must share the dependent's
// namespace; whether the owner's kind is namespaced at all is decided when
// it is looked up.
func ownerIdentity(ref metav1.OwnerReference, namespace string) objectReference {
	return objectReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID, Namespace: namespace}
}

// node is an object in the dependency graph: who owns it and whom it owns.
// The graph builder alone changes nodes; workers read them.
type node struct {
	mu       sync.RWMutex
	identity objectReference
	// dependents are the nodes whose owner references name this node.
	dependents map[*node]struct{}
	// owners are the object's owner references as last observed.
	owners []metav1.OwnerReference
	// beingDeleted: the object has a deletionTimestamp.
	beingDeleted bool
	// deletingDependents: it is being deleted in the foreground and waits
	// for its blocking dependents to go.
	deletingDependents bool
	// virtual: the node was made from a dependent's owner reference and no
	// informer has shown the object yet; it may not exist at all.
	virtual bool
}

func newNode(identity objectReference, owners []metav1.OwnerReference) *node {
	return &node{identity: identity, owners: owners, dependents: map[*node]struct{}{}}
}

func (n *node) getIdentity() objectReference {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.identity
}

func (n *node) isObserved() bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return !n.virtual
}

// markObserved records that an informer showed the object, under the
// identity it showed.
func (n *node) markObserved(identity objectReference) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.virtual = false
	n.identity = identity
}

func (n *node) isBeingDeleted() bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.beingDeleted
}

func (n *node) markBeingDeleted() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.beingDeleted = true
}

func (n *node) isDeletingDependents() bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.deletingDependents
}

func (n *node) markDeletingDependents() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.beingDeleted = true
	n.deletingDependents = true
}

func (n *node) getOwners() []metav1.OwnerReference {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.owners
}

func (n *node) setOwners(owners []metav1.OwnerReference) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.owners = owners
}

func (n *node) addDependent(dep *node) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dependents[dep] = struct{}{}
}

func (n *node) deleteDependent(dep *node) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.dependents, dep)
}

// getDependents returns the dependents ordered by namespace and name, so
// that the work done for them happens in a repeatable order.
func (n *node) getDependents() []*node {
	n.mu.RLock()
	out := make([]*node, 0, len(n.dependents))
	for dep := range n.dependents {
		out = append(out, dep)
	}
	n.mu.RUnlock()
	slices.SortFunc(out, func(a, b *node) int {
		ia, ib := a.getIdentity(), b.getIdentity()
		return cmp.Or(cmp.Compare(ia.Namespace, ib.Namespace), cmp.Compare(ia.Name, ib.Name), cmp.Compare(ia.UID, ib.UID))
	})
	return out
}

// blockingDependents are the dependents whose reference to n has
// blockOwnerDeletion set: a foreground deletion of n waits for them.
func (n *node) blockingDependents() []*node {
	uid := n.getIdentity().UID
	var out []*node
	for _, dep := range n.getDependents() {
		for _, ref := range dep.getOwners() {
			if ref.UID == uid && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
				out = append(out, dep)
				break
			}
		}
	}
	return out
}

// uidToNode is the graph: every node by its object's UID.
type uidToNode struct {
	mu    sync.RWMutex
	nodes map[types.UID]*node
}

func newUIDToNode() *uidToNode { return &uidToNode{nodes: map[types.UID]*node{}} }

func (m *uidToNode) read(uid types.UID) (*node, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, ok := m.nodes[uid]
	return n, ok
}

func (m *uidToNode) write(n *node) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nodes[n.getIdentity().UID] = n
}

func (m *uidToNode) delete(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.nodes, uid)
}

func (m *uidToNode) len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.nodes)
}
