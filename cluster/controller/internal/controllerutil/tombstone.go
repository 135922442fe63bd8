package controllerutil

import "k8s.io/client-go/tools/cache"

// DeletedObject unwraps what an informer's delete handler receives: the
// object itself, or, when the informer missed the deletion and learned of
// it from a relist, a tombstone holding the object's last known state. It
// reports false when obj is neither a T nor a tombstone of one.
func DeletedObject[T any](obj any) (T, bool) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	t, ok := obj.(T)
	return t, ok
}
