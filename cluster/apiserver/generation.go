package apiserver

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// metadata.generation counts the changes to what a user asks of an object,
// so that a controller can say, through status.observedGeneration, which of
// them it has acted on. Upstream leaves it to each resource's strategy:
// only the kinds below have one (Services, Nodes and Namespaces have a spec
// but no generation); it starts at 1 in PrepareForCreate and PrepareForUpdate
// bumps it when the desired state changes. Status writes, metadata-only
// writes and writes that change nothing leave it alone. The comparison is
// apiequality.Semantic's, as upstream's: a nil list equals an empty one and
// 1000m equals 1, so a client's round trip through JSON is no change.

// tracksGeneration reports whether objects of obj's kind have a generation.
func tracksGeneration(obj runtime.Object) bool {
	switch obj.(type) {
	case *corev1.Pod, *corev1.ReplicationController, *corev1.PodTemplate, *appsv1.Deployment, *appsv1.ReplicaSet, *appsv1.DaemonSet, *appsv1.StatefulSet,
		*batchv1.Job, *batchv1.CronJob, *discoveryv1.EndpointSlice, *policyv1.PodDisruptionBudget:
		return true
	}
	return false
}

// generationChanged reports whether the update from old to obj changes
// what obj's generation counts, as the kind's upstream PrepareForUpdate
// decides it.
func generationChanged(obj, old runtime.Object) bool {
	same := apiequality.Semantic.DeepEqual
	switch o := obj.(type) {
	case *corev1.Pod:
		return !same(o.Spec, old.(*corev1.Pod).Spec)
	case *corev1.ReplicationController:
		return !same(o.Spec, old.(*corev1.ReplicationController).Spec)
	case *corev1.PodTemplate:
		// A PodTemplate has no spec: its template is what it asks for.
		return !same(o.Template, old.(*corev1.PodTemplate).Template)
	case *appsv1.Deployment:
		// The deployment controller copies a Deployment's annotations to
		// its ReplicaSets, so they count as desired state too.
		od := old.(*appsv1.Deployment)
		return !same(o.Spec, od.Spec) || !same(o.Annotations, od.Annotations)
	case *appsv1.ReplicaSet:
		return !same(o.Spec, old.(*appsv1.ReplicaSet).Spec)
	case *appsv1.DaemonSet:
		return !same(o.Spec, old.(*appsv1.DaemonSet).Spec)
	case *appsv1.StatefulSet:
		return !same(o.Spec, old.(*appsv1.StatefulSet).Spec)
	case *batchv1.Job:
		return !same(o.Spec, old.(*batchv1.Job).Spec)
	case *batchv1.CronJob:
		return !same(o.Spec, old.(*batchv1.CronJob).Spec)
	case *policyv1.PodDisruptionBudget:
		return !same(o.Spec, old.(*policyv1.PodDisruptionBudget).Spec)
	case *discoveryv1.EndpointSlice:
		// An EndpointSlice has no spec: everything but its metadata is
		// desired state, and so are its labels (they tie it to its
		// Service).
		oe := old.(*discoveryv1.EndpointSlice)
		a, b := *o, *oe
		a.ObjectMeta, b.ObjectMeta = metav1.ObjectMeta{}, metav1.ObjectMeta{}
		return !same(a, b) || !same(o.Labels, oe.Labels)
	}
	return false
}
