package controllerutil

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// ExpectationsTimeout is how long a controller trusts its expectations
// (upstream's ExpectationsTimeout). If the informer never reports a create
// or delete (a watch event was lost), the controller syncs anyway once the
// expectations are this old, instead of waiting forever.
const ExpectationsTimeout = 5 * time.Minute

// ControllerExpectations counts, per controller key, the pod creations and
// deletions a sync has issued and the informer has not shown yet. A sync
// that finds them unsatisfied does not create or delete again: its cache is
// behind its own writes, and acting on it would double them.
type ControllerExpectations struct {
	mu      sync.Mutex
	clock   clock.PassiveClock
	timeout time.Duration
	items   map[string]*expectation
}

// expectation is one controller's outstanding work; add and del may drop
// below zero when the informer reports more than was expected (a pod
// created by someone else), which still counts as fulfilled.
type expectation struct {
	add, del int64
	// set is when the expectations were last set, for the timeout.
	set time.Time
}

// NewControllerExpectations returns empty expectations that expire after
// timeout (ExpectationsTimeout scaled by the cluster's speed).
func NewControllerExpectations(timeout time.Duration) *ControllerExpectations {
	return &ControllerExpectations{clock: clock.RealClock{}, timeout: timeout, items: map[string]*expectation{}}
}

// SatisfiedExpectations reports whether the controller of key may act on
// its cache: it has no expectations, they are fulfilled, or they expired.
func (e *ControllerExpectations) SatisfiedExpectations(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.items[key]
	if !ok {
		// A controller seen for the first time, or one whose expectations
		// were deleted, has nothing to wait for.
		return true
	}
	return (exp.add <= 0 && exp.del <= 0) || e.clock.Since(exp.set) > e.timeout
}

// SetExpectations replaces key's expectations: add creations and del
// deletions are about to be issued.
func (e *ControllerExpectations) SetExpectations(key string, add, del int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.items[key] = &expectation{add: int64(add), del: int64(del), set: e.clock.Now()}
}

// ExpectCreations records that n pods are about to be created for key.
func (e *ControllerExpectations) ExpectCreations(key string, n int) {
	e.SetExpectations(key, n, 0)
}

// ExpectDeletions records that n pods are about to be deleted for key.
func (e *ControllerExpectations) ExpectDeletions(key string, n int) {
	e.SetExpectations(key, 0, n)
}

// CreationObserved records that the informer showed one creation for key,
// or that a create failed and will never be shown.
func (e *ControllerExpectations) CreationObserved(key string) {
	e.LowerExpectations(key, 1, 0)
}

// DeletionObserved records that the informer showed one deletion for key,
// or that a delete failed and will never be shown.
func (e *ControllerExpectations) DeletionObserved(key string) {
	e.LowerExpectations(key, 0, 1)
}

// LowerExpectations takes add creations and del deletions off key's
// expectations; creations skipped after a failed slow-start batch are
// lowered this way.
func (e *ControllerExpectations) LowerExpectations(key string, add, del int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exp, ok := e.items[key]; ok {
		exp.add -= int64(add)
		exp.del -= int64(del)
	}
}

// DeleteExpectations forgets key, when its controller object is gone.
func (e *ControllerExpectations) DeleteExpectations(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.items, key)
}

// UIDTrackingControllerExpectations also remembers which pods a controller
// deleted (by pod key), as upstream's UIDTrackingControllerExpectations: a
// pod is seen deleted twice (first with a deletionTimestamp, then gone), and
// only the first sighting may count.
type UIDTrackingControllerExpectations struct {
	*ControllerExpectations
	mu      sync.Mutex
	deleted map[string]sets.Set[string]
}

// NewUIDTrackingControllerExpectations returns empty expectations that
// expire after timeout.
func NewUIDTrackingControllerExpectations(timeout time.Duration) *UIDTrackingControllerExpectations {
	return &UIDTrackingControllerExpectations{
		ControllerExpectations: NewControllerExpectations(timeout),
		deleted:                map[string]sets.Set[string]{},
	}
}

// ExpectDeletions records that the pods with the given keys are about to
// be deleted for key.
func (u *UIDTrackingControllerExpectations) ExpectDeletions(key string, podKeys []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.deleted[key] = sets.New(podKeys...)
	u.ControllerExpectations.ExpectDeletions(key, len(podKeys))
}

// DeletionObserved records the deletion of the pod podKey, once.
func (u *UIDTrackingControllerExpectations) DeletionObserved(key, podKey string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if pods := u.deleted[key]; pods.Has(podKey) {
		pods.Delete(podKey)
		u.ControllerExpectations.DeletionObserved(key)
	}
}

// DeleteExpectations forgets key and the pods it was deleting.
func (u *UIDTrackingControllerExpectations) DeleteExpectations(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.deleted, key)
	u.ControllerExpectations.DeleteExpectations(key)
}
