package validation

import (
	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// A ReplicationController is the ReplicaSet's core/v1 ancestor: its
// selector is a plain label map (equality only) and, unlike apps/v1's,
// may change after creation; its template is a pointer that must be set.

func validateReplicationController(rc *corev1.ReplicationController) field.ErrorList {
	allErrs := validateObjectMeta(&rc.ObjectMeta, true, nameIsDNSSubdomain)
	return append(allErrs, validateReplicationControllerSpec(&rc.Spec, specPath)...)
}

func validateReplicationControllerUpdate(rc, old *corev1.ReplicationController) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&rc.ObjectMeta, &old.ObjectMeta)
	return append(allErrs, validateReplicationControllerSpec(&rc.Spec, specPath)...)
}

func validateReplicationControllerSpec(spec *corev1.ReplicationControllerSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateNonnegative(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))
	if len(spec.Selector) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("selector"), ""))
	} else {
		allErrs = append(allErrs, metav1validation.ValidateLabels(spec.Selector, fldPath.Child("selector"))...)
	}
	allErrs = append(allErrs, validateNonnegative(int64(ptr.Deref(spec.Replicas, 1)), fldPath.Child("replicas"))...)
	if spec.Template == nil {
		return append(allErrs, field.Required(fldPath.Child("template"), ""))
	}
	selector := labels.Set(spec.Selector).AsSelectorPreValidated()
	return append(allErrs, validateTemplateForReplicaSet(spec.Template, selector, "ReplicationController", fldPath.Child("template"))...)
}

func validateReplicationControllerStatusUpdate(rc, old *corev1.ReplicationController) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&rc.ObjectMeta, &old.ObjectMeta)
	s := &rc.Status
	for _, c := range []counter{
		{"replicas", int64(s.Replicas)}, {"fullyLabeledReplicas", int64(s.FullyLabeledReplicas)},
		{"readyReplicas", int64(s.ReadyReplicas)}, {"availableReplicas", int64(s.AvailableReplicas)},
		{"observedGeneration", s.ObservedGeneration},
	} {
		allErrs = append(allErrs, validateNonnegative(c.value, statusPath.Child(c.name))...)
	}
	allErrs = append(allErrs, notAboveReplicas(s.Replicas, statusPath, "fullyLabeledReplicas", s.FullyLabeledReplicas)...)
	allErrs = append(allErrs, notAboveReplicas(s.Replicas, statusPath, "readyReplicas", s.ReadyReplicas)...)
	allErrs = append(allErrs, notAboveReplicas(s.Replicas, statusPath, "availableReplicas", s.AvailableReplicas)...)
	if s.AvailableReplicas > s.ReadyReplicas {
		allErrs = append(allErrs, field.Invalid(statusPath.Child("availableReplicas"), s.AvailableReplicas, "cannot be greater than readyReplicas"))
	}
	return allErrs
}

// A PodTemplate is a pod spec stored on its own, for controllers and
// tools to copy from: its name follows a pod's rules and its template a
// workload template's, without the restart policy a workload needs.

func validatePodTemplate(t *corev1.PodTemplate) field.ErrorList {
	allErrs := validateObjectMeta(&t.ObjectMeta, true, nameIsDNSSubdomain)
	return append(allErrs, validatePodTemplateSpec(&t.Template, field.NewPath("template"))...)
}

func validatePodTemplateUpdate(t, old *corev1.PodTemplate) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&t.ObjectMeta, &old.ObjectMeta)
	return append(allErrs, validatePodTemplateSpec(&t.Template, field.NewPath("template"))...)
}
