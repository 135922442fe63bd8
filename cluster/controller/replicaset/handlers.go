package replicaset

import (
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
)

// The handlers only decide which ReplicaSets to sync and record what the
// informer showed against the expectations; the sync does the rest.

func (rsc *Controller) enqueue(rs *appsv1.ReplicaSet) {
	if key, err := cache.MetaNamespaceKeyFunc(rs); err == nil {
		rsc.queue.Add(key)
	}
}

func (rsc *Controller) enqueueAfter(rs *appsv1.ReplicaSet, after time.Duration) {
	if key, err := cache.MetaNamespaceKeyFunc(rs); err == nil {
		rsc.queue.AddAfter(key, after)
	}
}

func (rsc *Controller) addReplicaSet(obj any) {
	if rs, ok := rsc.sets.FromInformer(obj); ok {
		rsc.enqueue(rs)
	}
}

func (rsc *Controller) updateReplicaSet(_, cur any) {
	// Every update, status ones included, is a reason to look again: a
	// resize to the same count still bumps the generation to observe.
	if rs, ok := rsc.sets.FromInformer(cur); ok {
		rsc.enqueue(rs)
	}
}

func (rsc *Controller) deleteReplicaSet(obj any) {
	rs, ok := rsc.sets.FromInformer(obj)
	if !ok {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(rs)
	if err != nil {
		return
	}
	rsc.expectations.DeleteExpectations(key)
	rsc.queue.Add(key)
}

// resolveControllerRef returns the ReplicaSet ref names, if it is in the
// cache with the same UID (not a namesake created after a delete).
func (rsc *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	if ref.Kind != rsc.kind.Kind {
		return nil
	}
	rs, err := rsc.sets.Get(namespace, ref.Name)
	if err != nil || rs.UID != ref.UID {
		return nil
	}
	return rs
}

// replicaSetsForPod returns the ReplicaSets whose selector matches an
// orphan pod: any of them may want to adopt it.
func (rsc *Controller) replicaSetsForPod(pod *corev1.Pod) []*appsv1.ReplicaSet {
	if len(pod.Labels) == 0 {
		return nil
	}
	list, err := rsc.sets.List(pod.Namespace)
	if err != nil {
		return nil
	}
	out := controllerutil.Selecting(list, func(c *appsv1.ReplicaSet) *metav1.LabelSelector { return c.Spec.Selector }, pod.Labels)
	if len(out) > 1 {
		// Overlapping selectors: the first to sync adopts it.
		rsc.logger.Info("user error: more than one "+rsc.kind.Kind+" selects the same pod", "pod", controllerutil.PodKey(pod))
	}
	return out
}

func (rsc *Controller) addPod(obj any) {
	pod := obj.(*corev1.Pod)
	if pod.DeletionTimestamp != nil {
		// After a restart of the manager a pod may first appear already
		// being deleted; it must not count as an observed creation.
		rsc.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		rs := rsc.resolveControllerRef(pod.Namespace, ref)
		if rs == nil {
			return
		}
		key, err := cache.MetaNamespaceKeyFunc(rs)
		if err != nil {
			return
		}
		rsc.expectations.CreationObserved(key)
		rsc.queue.Add(key)
		return
	}
	// An orphan: wake every ReplicaSet that may adopt it. No creation is
	// observed, as no ReplicaSet created it.
	for _, rs := range rsc.replicaSetsForPod(pod) {
		rsc.enqueue(rs)
	}
}

func (rsc *Controller) updatePod(old, cur any) {
	oldPod, curPod := old.(*corev1.Pod), cur.(*corev1.Pod)
	if curPod.ResourceVersion == oldPod.ResourceVersion {
		// A periodic resync; nothing changed.
		return
	}
	labelChanged := !reflect.DeepEqual(curPod.Labels, oldPod.Labels)
	if curPod.DeletionTimestamp != nil {
		// A graceful delete first sets the deletionTimestamp; the pod
		// leaves the store only when its kubelet is done. The ReplicaSet
		// replaces it now, not then.
		rsc.deletePod(curPod)
		if labelChanged {
			rsc.deletePod(oldPod)
		}
		return
	}
	curRef, oldRef := metav1.GetControllerOf(curPod), metav1.GetControllerOf(oldPod)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if rs := rsc.resolveControllerRef(oldPod.Namespace, oldRef); rs != nil {
			rsc.enqueue(rs)
		}
	}
	if curRef != nil {
		rs := rsc.resolveControllerRef(curPod.Namespace, curRef)
		if rs == nil {
			return
		}
		rsc.enqueue(rs)
		// A pod that just became ready turns available minReadySeconds
		// later, and nothing else will wake the ReplicaSet then. The extra
		// second absorbs timer skew (kubernetes#39785).
		if !controllerutil.IsPodReady(oldPod) && controllerutil.IsPodReady(curPod) && rs.Spec.MinReadySeconds > 0 {
			rsc.enqueueAfter(rs, time.Duration(rs.Spec.MinReadySeconds)*time.Second+time.Second)
		}
		return
	}
	if labelChanged || refChanged {
		for _, rs := range rsc.replicaSetsForPod(curPod) {
			rsc.enqueue(rs)
		}
	}
}

func (rsc *Controller) deletePod(obj any) {
	// A delete missed by the watch arrives as a tombstone from the
	// relist; its object may be stale.
	pod, ok := controllerutil.DeletedObject[*corev1.Pod](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return // nobody waits for an orphan's deletion
	}
	rs := rsc.resolveControllerRef(pod.Namespace, ref)
	if rs == nil {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(rs)
	if err != nil {
		return
	}
	rsc.expectations.DeletionObserved(key, controllerutil.PodKey(pod))
	rsc.queue.Add(key)
}
