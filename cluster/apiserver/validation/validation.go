package validation

import (
	"fmt"
	"reflect"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/klab-dev/klab/cluster/apiserver/hpaconv"
)

// ValidateCreate returns upstream's field errors for a new object, which must
// already be defaulted. Kinds this package does not know return no errors.
func ValidateCreate(obj runtime.Object) field.ErrorList {
	if isNil(obj) {
		return nil
	}
	namespaced := true
	var allErrs field.ErrorList
	switch o := obj.(type) {
	case *corev1.Pod:
		allErrs = validatePodCreate(o)
	case *corev1.Binding:
		// A binding is a request, not a stored object: no metadata rules.
		return validateBinding(o)
	case *corev1.Service:
		allErrs = validateService(o)
	case *corev1.Endpoints:
		allErrs = validateEndpoints(o)
	case *corev1.Namespace:
		allErrs, namespaced = validateNamespace(o), false
	case *corev1.Node:
		allErrs, namespaced = validateNode(o), false
	case *corev1.ConfigMap:
		allErrs = validateConfigMap(o)
	case *corev1.Secret:
		allErrs = validateSecret(o)
	case *corev1.ServiceAccount:
		allErrs = validateObjectMeta(&o.ObjectMeta, true, nameIsDNSSubdomain)
	case *corev1.ResourceQuota:
		allErrs = validateResourceQuota(o)
	case *corev1.LimitRange:
		allErrs = validateLimitRange(o)
	case *corev1.ReplicationController:
		allErrs = validateReplicationController(o)
	case *corev1.PodTemplate:
		allErrs = validatePodTemplate(o)
	case *corev1.Event:
		allErrs = validateCoreEvent(o)
	case *eventsv1.Event:
		allErrs = validateEventsEvent(o)
	case *appsv1.Deployment:
		allErrs = validateDeployment(o)
	case *appsv1.ReplicaSet:
		allErrs = validateReplicaSet(o)
	case *appsv1.DaemonSet:
		allErrs = validateDaemonSet(o)
	case *appsv1.StatefulSet:
		allErrs = validateStatefulSet(o)
	case *appsv1.ControllerRevision:
		allErrs = validateControllerRevision(o)
	case *batchv1.Job:
		allErrs = validateJob(o)
	case *batchv1.CronJob:
		allErrs = validateCronJob(o)
	case *autoscalingv2.HorizontalPodAutoscaler:
		allErrs = validateHPA(o)
	case *autoscalingv1.HorizontalPodAutoscaler:
		allErrs = validateHPA(hpaconv.ToV2(o))
	case *coordinationv1.Lease:
		allErrs = validateLease(o)
	case *discoveryv1.EndpointSlice:
		allErrs = validateEndpointSlice(o)
	case *policyv1.PodDisruptionBudget:
		allErrs = validatePodDisruptionBudget(o)
	case *schedulingv1.PriorityClass:
		allErrs, namespaced = validatePriorityClass(o), false
	case *rbacv1.Role:
		allErrs = validateRole(o)
	case *rbacv1.ClusterRole:
		allErrs, namespaced = validateClusterRole(o), false
	case *rbacv1.RoleBinding:
		allErrs = validateRoleBinding(o)
	case *rbacv1.ClusterRoleBinding:
		allErrs, namespaced = validateClusterRoleBinding(o), false
	case *certificatesv1.CertificateSigningRequest:
		allErrs, namespaced = validateCSR(o), false
	default:
		return nil
	}
	if len(allErrs) > 0 {
		return allErrs
	}
	// Upstream's generic create path then checks the metadata once more,
	// with only the rules every object shares (BeforeCreate in
	// k8s.io/apiserver). Only a kind whose own checks skip its metadata,
	// such as a core/v1 Event, can fail here.
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(metadataPath, err)}
	}
	return apimachineryvalidation.ValidateObjectMetaAccessor(accessor, namespaced, pathSegmentName, metadataPath)
}

// ValidateUpdate returns upstream's field errors for replacing old with obj:
// obj must be valid on its own, and the change must be allowed (no
// immutable field moved). Both must already be defaulted and of the same
// kind. Kinds this package does not know return no errors.
func ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	if isNil(obj) {
		return nil
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		return withOld(o, old, validatePodUpdate)
	case *corev1.Service:
		return withOld(o, old, validateServiceUpdate)
	case *corev1.Endpoints:
		return withOld(o, old, validateEndpointsUpdate)
	case *corev1.Namespace:
		return withOld(o, old, validateNamespaceUpdate)
	case *corev1.Node:
		return withOld(o, old, validateNodeUpdate)
	case *corev1.ConfigMap:
		return withOld(o, old, validateConfigMapUpdate)
	case *corev1.Secret:
		return withOld(o, old, validateSecretUpdate)
	case *corev1.ServiceAccount:
		return withOld(o, old, validateServiceAccountUpdate)
	case *corev1.ResourceQuota:
		return withOld(o, old, validateResourceQuotaUpdate)
	case *corev1.LimitRange:
		return withOld(o, old, validateLimitRangeUpdate)
	case *corev1.ReplicationController:
		return withOld(o, old, validateReplicationControllerUpdate)
	case *corev1.PodTemplate:
		return withOld(o, old, validatePodTemplateUpdate)
	case *corev1.Event:
		return withOld(o, old, validateCoreEventUpdate)
	case *eventsv1.Event:
		return withOld(o, old, validateEventsEventUpdate)
	case *appsv1.Deployment:
		return withOld(o, old, validateDeploymentUpdate)
	case *appsv1.ReplicaSet:
		return withOld(o, old, validateReplicaSetUpdate)
	case *appsv1.DaemonSet:
		return withOld(o, old, validateDaemonSetUpdate)
	case *appsv1.StatefulSet:
		return withOld(o, old, validateStatefulSetUpdate)
	case *appsv1.ControllerRevision:
		return withOld(o, old, validateControllerRevisionUpdate)
	case *batchv1.Job:
		return withOld(o, old, validateJobUpdate)
	case *batchv1.CronJob:
		return withOld(o, old, validateCronJobUpdate)
	case *autoscalingv2.HorizontalPodAutoscaler:
		return withOld(o, old, validateHPAUpdate)
	case *autoscalingv1.HorizontalPodAutoscaler:
		return withOld(o, old, asV2(validateHPAUpdate))
	case *coordinationv1.Lease:
		return withOld(o, old, validateLeaseUpdate)
	case *discoveryv1.EndpointSlice:
		return withOld(o, old, validateEndpointSliceUpdate)
	case *policyv1.PodDisruptionBudget:
		return withOld(o, old, validatePodDisruptionBudgetUpdate)
	case *schedulingv1.PriorityClass:
		return withOld(o, old, validatePriorityClassUpdate)
	case *rbacv1.Role:
		return withOld(o, old, validateRoleUpdate)
	case *rbacv1.ClusterRole:
		return withOld(o, old, validateClusterRoleUpdate)
	case *rbacv1.RoleBinding:
		return withOld(o, old, validateRoleBindingUpdate)
	case *rbacv1.ClusterRoleBinding:
		return withOld(o, old, validateClusterRoleBindingUpdate)
	case *certificatesv1.CertificateSigningRequest:
		return withOld(o, old, validateCSRUpdate)
	}
	return nil
}

// ValidateStatusUpdate returns upstream's field errors for a write to the
// status subresource, which changes only status (and metadata). Kinds
// without a status subresource, and kinds this package does not know, return
// no errors.
func ValidateStatusUpdate(obj, old runtime.Object) field.ErrorList {
	if isNil(obj) {
		return nil
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		return withOld(o, old, validatePodStatusUpdate)
	case *corev1.Service:
		return withOld(o, old, validateServiceStatusUpdate)
	case *corev1.Namespace:
		return withOld(o, old, validateNamespaceStatusUpdate)
	case *corev1.ResourceQuota:
		return withOld(o, old, validateResourceQuotaStatusUpdate)
	case *corev1.ReplicationController:
		return withOld(o, old, validateReplicationControllerStatusUpdate)
	case *corev1.Node:
		// Upstream checks a Node's status write exactly like an update.
		return withOld(o, old, validateNodeUpdate)
	case *appsv1.Deployment:
		return withOld(o, old, validateDeploymentStatusUpdate)
	case *appsv1.ReplicaSet:
		return withOld(o, old, validateReplicaSetStatusUpdate)
	case *appsv1.DaemonSet:
		return withOld(o, old, validateDaemonSetStatusUpdate)
	case *appsv1.StatefulSet:
		return withOld(o, old, validateStatefulSetStatusUpdate)
	case *batchv1.Job:
		return withOld(o, old, validateJobStatusUpdate)
	case *batchv1.CronJob:
		return withOld(o, old, validateCronJobStatusUpdate)
	case *autoscalingv2.HorizontalPodAutoscaler:
		return withOld(o, old, validateHPAStatusUpdate)
	case *autoscalingv1.HorizontalPodAutoscaler:
		return withOld(o, old, asV2(validateHPAStatusUpdate))
	case *policyv1.PodDisruptionBudget:
		return withOld(o, old, validatePodDisruptionBudgetStatusUpdate)
	case *certificatesv1.CertificateSigningRequest:
		return withOld(o, old, validateCSRStatusUpdate)
	}
	return nil
}

// pathSegmentName is the one naming rule every object shares: its name is a
// segment of its URL, so it may not be "." or "..", nor contain '/' or '%'.
func pathSegmentName(name string, prefix bool) []string {
	if prefix {
		return content.IsPathSegmentPrefix(name)
	}
	return content.IsPathSegmentName(name)
}

// withOld calls check with old as the same type as obj, or reports that the
// caller passed two different kinds.
func withOld[T runtime.Object](obj T, old runtime.Object, check func(obj, old T) field.ErrorList) field.ErrorList {
	o, ok := old.(T)
	if !ok || isNil(old) {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("cannot compare %T with old object of type %T", obj, old))}
	}
	return check(obj, o)
}

// isNil reports whether obj is nil or a nil pointer, which there is nothing
// to check in.
func isNil(obj runtime.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
