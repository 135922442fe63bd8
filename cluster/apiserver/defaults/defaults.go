package defaults

import (
	"reflect"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/utils/ptr"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Default sets, in place, the fields kube-apiserver fills in on create and
// update for obj. Objects of kinds without defaults (ServiceAccount, Event,
// Binding, Lease, events.k8s.io Event) and kinds this package does not know
// are left as they are.
//
// A new Job's metadata.uid must be set before Default is called: the
// selector generated for the Job names it, and without it there is none.
func Default(obj runtime.Object) {
	if v := reflect.ValueOf(obj); obj == nil || (v.Kind() == reflect.Pointer && v.IsNil()) {
		return
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		defaultPod(o)
	case *corev1.Service:
		defaultService(o)
	case *corev1.Endpoints:
		defaultEndpoints(o)
	case *corev1.Namespace:
		defaultNamespace(o)
	case *corev1.Node:
		defaultNode(o)
	case *corev1.Secret:
		defaultSecret(o)
	case *corev1.LimitRange:
		defaultLimitRange(o)
	case *corev1.ReplicationController:
		defaultReplicationController(o)
	case *corev1.PodTemplate:
		defaultPodTemplate(o)
	case *corev1.ConfigMap:
		// Upstream makes data an empty map. It is invisible on the wire
		// (omitempty), but it keeps a decoded object equal to a stored one.
		if o.Data == nil {
			o.Data = map[string]string{}
		}
	case *appsv1.Deployment:
		defaultDeployment(o)
	case *appsv1.ReplicaSet:
		defaultReplicaSet(o)
	case *appsv1.DaemonSet:
		defaultDaemonSet(o)
	case *appsv1.StatefulSet:
		defaultStatefulSet(o)
	case *batchv1.Job:
		defaultJob(o)
	case *batchv1.CronJob:
		defaultCronJob(o)
	case *autoscalingv2.HorizontalPodAutoscaler:
		defaultHPA(o)
	case *autoscalingv1.HorizontalPodAutoscaler:
		// Upstream's v1 default; the rest of v2's comes with the
		// conversion to the stored v2 object.
		if o.Spec.MinReplicas == nil {
			o.Spec.MinReplicas = ptr.To[int32](1)
		}
	case *discoveryv1.EndpointSlice:
		defaultEndpointSlice(o)
	case *schedulingv1.PriorityClass:
		// A class without a policy lets its pods preempt, as upstream's default.
		if o.PreemptionPolicy == nil {
			p := corev1.PreemptLowerPriority
			o.PreemptionPolicy = &p
		}
	}
}
