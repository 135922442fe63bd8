package daemonset

import (
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
)

// The handlers only decide which DaemonSets to sync and record what the
// informer showed against the expectations; the sync does the rest.

func (dsc *Controller) enqueue(ds *appsv1.DaemonSet) {
	if key, err := cache.MetaNamespaceKeyFunc(ds); err == nil {
		dsc.queue.Add(key)
	}
}

func (dsc *Controller) enqueueAfter(ds *appsv1.DaemonSet, after time.Duration) {
	if key, err := cache.MetaNamespaceKeyFunc(ds); err == nil {
		dsc.queue.AddAfter(key, after)
	}
}

func (dsc *Controller) addDaemonSet(obj any) { dsc.enqueue(obj.(*appsv1.DaemonSet)) }

func (dsc *Controller) updateDaemonSet(old, cur any) {
	oldDS, curDS := old.(*appsv1.DaemonSet), cur.(*appsv1.DaemonSet)
	if oldDS.UID != curDS.UID {
		// Deleted and recreated under the same name between two events.
		dsc.deleteDaemonSet(oldDS)
	}
	dsc.enqueue(curDS)
}

func (dsc *Controller) deleteDaemonSet(obj any) {
	ds, ok := controllerutil.DeletedObject[*appsv1.DaemonSet](obj)
	if !ok {
		return
	}
	// The sync of a missing DaemonSet forgets its expectations.
	dsc.enqueue(ds)
}

func (dsc *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1.DaemonSet {
	if ref.Kind != controllerKind.Kind {
		return nil
	}
	ds, err := dsc.dsLister.DaemonSets(namespace).Get(ref.Name)
	if err != nil || ds.UID != ref.UID {
		return nil
	}
	return ds
}

// daemonSetsForPod returns the DaemonSets whose selector matches an
// orphan pod.
func (dsc *Controller) daemonSetsForPod(pod *corev1.Pod) []*appsv1.DaemonSet {
	if len(pod.Labels) == 0 {
		return nil
	}
	list, err := dsc.dsLister.DaemonSets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	return controllerutil.Selecting(list, func(c *appsv1.DaemonSet) *metav1.LabelSelector { return c.Spec.Selector }, pod.Labels)
}

func (dsc *Controller) addPod(obj any) {
	pod := obj.(*corev1.Pod)
	if pod.DeletionTimestamp != nil {
		// Seen for the first time while being deleted (after a restart):
		// not a creation to observe.
		dsc.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		ds := dsc.resolveControllerRef(pod.Namespace, ref)
		if ds == nil {
			return
		}
		key, err := cache.MetaNamespaceKeyFunc(ds)
		if err != nil {
			return
		}
		dsc.expectations.CreationObserved(key)
		dsc.queue.Add(key)
		return
	}
	for _, ds := range dsc.daemonSetsForPod(pod) {
		dsc.enqueue(ds)
	}
}

func (dsc *Controller) updatePod(old, cur any) {
	oldPod, curPod := old.(*corev1.Pod), cur.(*corev1.Pod)
	if curPod.ResourceVersion == oldPod.ResourceVersion {
		return // a periodic resync
	}
	if curPod.DeletionTimestamp != nil {
		// Replace a pod being deleted now, not when its kubelet is done.
		dsc.deletePod(curPod)
		return
	}
	curRef, oldRef := metav1.GetControllerOf(curPod), metav1.GetControllerOf(oldPod)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if ds := dsc.resolveControllerRef(oldPod.Namespace, oldRef); ds != nil {
			dsc.enqueue(ds)
		}
	}
	if curRef != nil {
		ds := dsc.resolveControllerRef(curPod.Namespace, curRef)
		if ds == nil {
			return
		}
		dsc.enqueue(ds)
		// Nothing else wakes the DaemonSet when a ready pod turns
		// available; one more second absorbs timer skew.
		if !controllerutil.IsPodReady(oldPod) && controllerutil.IsPodReady(curPod) && ds.Spec.MinReadySeconds > 0 {
			dsc.enqueueAfter(ds, time.Duration(ds.Spec.MinReadySeconds)*time.Second+time.Second)
		}
		return
	}
	if refChanged || !reflect.DeepEqual(curPod.Labels, oldPod.Labels) {
		for _, ds := range dsc.daemonSetsForPod(curPod) {
			dsc.enqueue(ds)
		}
	}
}

func (dsc *Controller) deletePod(obj any) {
	pod, ok := controllerutil.DeletedObject[*corev1.Pod](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return
	}
	ds := dsc.resolveControllerRef(pod.Namespace, ref)
	if ds == nil {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(ds)
	if err != nil {
		return
	}
	dsc.expectations.DeletionObserved(key)
	dsc.queue.Add(key)
}

func (dsc *Controller) allDaemonSets() []*appsv1.DaemonSet {
	list, err := dsc.dsLister.List(labels.Everything())
	if err != nil {
		return nil
	}
	return list
}

// addNode syncs the DaemonSets that should run on the new node.
func (dsc *Controller) addNode(obj any) {
	node := obj.(*corev1.Node)
	for _, ds := range dsc.allDaemonSets() {
		if shouldRun, _ := nodeShouldRunDaemonPod(node, ds); shouldRun {
			dsc.enqueue(ds)
		}
	}
}

// updateNode syncs the DaemonSets whose verdict about the node changed.
// Only labels, taints and the name decide; heartbeats, which update the
// node every few seconds, are ignored.
func (dsc *Controller) updateNode(old, cur any) {
	oldNode, curNode := old.(*corev1.Node), cur.(*corev1.Node)
	if reflect.DeepEqual(oldNode.Labels, curNode.Labels) && apiequality.Semantic.DeepEqual(oldNode.Spec.Taints, curNode.Spec.Taints) {
		return
	}
	for _, ds := range dsc.allDaemonSets() {
		oldRun, oldContinue := nodeShouldRunDaemonPod(oldNode, ds)
		curRun, curContinue := nodeShouldRunDaemonPod(curNode, ds)
		if oldRun != curRun || oldContinue != curContinue {
			dsc.enqueue(ds)
		}
	}
}

// deleteNode syncs every DaemonSet: pods bound for a node that is gone
// and never scheduled are deleted, and the counts change.
func (dsc *Controller) deleteNode(any) {
	for _, ds := range dsc.allDaemonSets() {
		dsc.enqueue(ds)
	}
}
