package endpointslice

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// sliceTracker remembers the controller's own writes to each Service's
// slices until the informer cache shows them, for two reasons: a sync from
// a cache that has not seen a slice the controller just created would
// create it again (upstream's EndpointSliceTracker); and the informer
// events of the controller's own writes need no sync.
//
// Upstream compares metadata.generation; klab's API server counts
// generations only for objects with a spec, so this tracker compares
// resourceVersions, for equality only as their contract allows: the cache
// is behind while it holds a slice at the version a write replaced, lacks
// a slice the controller created, or still holds one it deleted.
type sliceTracker struct {
	mu sync.Mutex
	// byService maps a Service key to its slices' expectations.
	byService map[string]map[types.UID]*expectation
}

type expectation struct {
	// written is the resourceVersion the controller's write returned.
	written string
	// replaced is the resourceVersion the write replaced ("" for a create).
	replaced string
	// deleted is set once the controller deleted the slice.
	deleted bool
}

func newSliceTracker() *sliceTracker {
	return &sliceTracker{byService: map[string]map[types.UID]*expectation{}}
}

func serviceKey(namespace, name string) string { return namespace + "/" + name }

func (t *sliceTracker) forService(key string) map[types.UID]*expectation {
	m := t.byService[key]
	if m == nil {
		m = map[types.UID]*expectation{}
		t.byService[key] = m
	}
	return m
}

// written records a create (replaced "") or an update of a slice.
func (t *sliceTracker) written(service *corev1.Service, s *discoveryv1.EndpointSlice, replaced string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forService(serviceKey(service.Namespace, service.Name))[s.UID] = &expectation{written: s.ResourceVersion, replaced: replaced}
}

// deleted records that the controller deleted a slice.
func (t *sliceTracker) deleted(service *corev1.Service, s *discoveryv1.EndpointSlice) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forService(serviceKey(service.Namespace, service.Name))[s.UID] = &expectation{deleted: true}
}

// stale reports whether cached, the Service's slices in the informer
// cache, miss any of the controller's writes. Expectations the cache has
// met are forgotten.
func (t *sliceTracker) stale(service *corev1.Service, cached []*discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	expected := t.byService[serviceKey(service.Namespace, service.Name)]
	if len(expected) == 0 {
		return false
	}
	inCache := make(map[types.UID]*discoveryv1.EndpointSlice, len(cached))
	for _, s := range cached {
		inCache[s.UID] = s
	}
	isStale := false
	for uid, exp := range expected {
		s, ok := inCache[uid]
		switch {
		case exp.deleted && ok, !exp.deleted && !ok:
			isStale = true
		case !exp.deleted && exp.replaced != "" && s.ResourceVersion == exp.replaced:
			isStale = true
		case exp.deleted:
			delete(expected, uid)
		}
	}
	return isStale
}

// shouldSync reports whether an informer add or update of a slice needs a
// sync: not when it is the controller's own write.
func (t *sliceTracker) shouldSync(s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	exp := t.byService[serviceKey(s.Namespace, s.Labels[discoveryv1.LabelServiceName])][s.UID]
	return exp == nil || exp.deleted || exp.written != s.ResourceVersion
}

// handleDeletion forgets a deleted slice and reports whether the
// controller expected the deletion (then no sync is needed).
func (t *sliceTracker) handleDeletion(s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.byService[serviceKey(s.Namespace, s.Labels[discoveryv1.LabelServiceName])]
	exp := m[s.UID]
	delete(m, s.UID)
	return exp != nil && exp.deleted
}

// deleteService forgets a deleted Service.
func (t *sliceTracker) deleteService(namespace, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.byService, serviceKey(namespace, name))
}
