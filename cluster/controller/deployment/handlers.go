package deployment

import (
	"reflect"
	"time"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// The handlers only decide which Deployments to sync.

func (dc *Controller) enqueue(d *appsv1.Deployment) {
	if key, err := cache.MetaNamespaceKeyFunc(d); err == nil {
		dc.queue.Add(key)
	}
}

func (dc *Controller) enqueueRateLimited(d *appsv1.Deployment) {
	if key, err := cache.MetaNamespaceKeyFunc(d); err == nil {
		dc.queue.AddRateLimited(key)
	}
}

func (dc *Controller) enqueueAfter(d *appsv1.Deployment, after time.Duration) {
	if key, err := cache.MetaNamespaceKeyFunc(d); err == nil {
		dc.queue.AddAfter(key, after)
	}
}

func (dc *Controller) addDeployment(obj any) { dc.enqueue(obj.(*appsv1.Deployment)) }

func (dc *Controller) updateDeployment(_, cur any) { dc.enqueue(cur.(*appsv1.Deployment)) }

func (dc *Controller) deleteDeployment(obj any) {
	d, ok := controllerutil.DeletedObject[*appsv1.Deployment](obj)
	if !ok {
		return
	}
	dc.enqueue(d)
}

// resolveControllerRef returns the Deployment ref names, if it is in the
// cache with the same UID.
func (dc *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1.Deployment {
	if ref.Kind != controllerKind.Kind {
		return nil
	}
	d, err := dc.dLister.Deployments(namespace).Get(ref.Name)
	if err != nil || d.UID != ref.UID {
		return nil
	}
	return d
}

// deploymentsForReplicaSet returns the Deployments whose selector matches
// an orphan ReplicaSet; more than one is a user error, and the first to
// sync adopts it.
func (dc *Controller) deploymentsForReplicaSet(rs *appsv1.ReplicaSet) []*appsv1.Deployment {
	if len(rs.Labels) == 0 {
		return nil
	}
	list, err := dc.dLister.Deployments(rs.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	return controllerutil.Selecting(list, func(c *appsv1.Deployment) *metav1.LabelSelector { return c.Spec.Selector }, rs.Labels)
}

func (dc *Controller) addReplicaSet(obj any) {
	rs := obj.(*appsv1.ReplicaSet)
	if rs.DeletionTimestamp != nil {
		// Seen for the first time while being deleted (after a restart).
		dc.deleteReplicaSet(rs)
		return
	}
	if ref := metav1.GetControllerOf(rs); ref != nil {
		if d := dc.resolveControllerRef(rs.Namespace, ref); d != nil {
			dc.enqueue(d)
		}
		return
	}
	for _, d := range dc.deploymentsForReplicaSet(rs) {
		dc.enqueue(d)
	}
}

func (dc *Controller) updateReplicaSet(old, cur any) {
	oldRS, curRS := old.(*appsv1.ReplicaSet), cur.(*appsv1.ReplicaSet)
	if curRS.ResourceVersion == oldRS.ResourceVersion {
		return // a periodic resync
	}
	curRef, oldRef := metav1.GetControllerOf(curRS), metav1.GetControllerOf(oldRS)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if d := dc.resolveControllerRef(oldRS.Namespace, oldRef); d != nil {
			dc.enqueue(d)
		}
	}
	if curRef != nil {
		if d := dc.resolveControllerRef(curRS.Namespace, curRef); d != nil {
			dc.enqueue(d)
		}
		return
	}
	if refChanged || !reflect.DeepEqual(curRS.Labels, oldRS.Labels) {
		for _, d := range dc.deploymentsForReplicaSet(curRS) {
			dc.enqueue(d)
		}
	}
}

func (dc *Controller) deleteReplicaSet(obj any) {
	rs, ok := controllerutil.DeletedObject[*appsv1.ReplicaSet](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(rs); ref != nil {
		if d := dc.resolveControllerRef(rs.Namespace, ref); d != nil {
			dc.enqueue(d)
		}
	}
}

// deletePod wakes a Recreate Deployment when one of its pods goes: it
// waits for the old pods to be gone before it creates new ones. A rolling
// update only looks at ReplicaSet counts, which the ReplicaSet handlers
// follow.
func (dc *Controller) deletePod(obj any) {
	pod, ok := controllerutil.DeletedObject[*corev1.Pod](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "ReplicaSet" {
		return
	}
	rs, err := dc.rsLister.ReplicaSets(pod.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return
	}
	rsRef := metav1.GetControllerOf(rs)
	if rsRef == nil {
		return
	}
	if d := dc.resolveControllerRef(rs.Namespace, rsRef); d != nil && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		dc.enqueue(d)
	}
}
