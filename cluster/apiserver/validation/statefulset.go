package validation

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A StatefulSet's Pods have stable names (web-0, web-1, ...) and stable
// claims, so most of its spec is fixed once it exists: upstream lets only
// the replica count, the template, the update strategy and a few
// bookkeeping fields change.

func validateStatefulSet(sts *appsv1.StatefulSet) field.ErrorList {
	allErrs := validateObjectMeta(&sts.ObjectMeta, true, nameIsDNSSubdomain)
	return append(allErrs, validateStatefulSetSpec(&sts.Spec, specPath)...)
}

func validateStatefulSetSpec(spec *appsv1.StatefulSetSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch spec.PodManagementPolicy {
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	case "":
		allErrs = append(allErrs, field.Required(fldPath.Child("podManagementPolicy"), ""))
	default:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("podManagementPolicy"), spec.PodManagementPolicy,
			"must be 'OrderedReady' or 'Parallel'"))
	}
	strategy := fldPath.Child("updateStrategy")
	switch spec.UpdateStrategy.Type {
	case "":
		allErrs = append(allErrs, field.Required(strategy, ""))
	case appsv1.OnDeleteStatefulSetStrategyType:
		if spec.UpdateStrategy.RollingUpdate != nil {
			allErrs = append(allErrs, field.Invalid(strategy.Child("rollingUpdate"), spec.UpdateStrategy.RollingUpdate,
				"only allowed for updateStrategy 'RollingUpdate'"))
		}
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if ru := spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
			allErrs = append(allErrs, validateNonnegative(int64(*ru.Partition), strategy.Child("rollingUpdate", "partition"))...)
		}
	default:
		allErrs = append(allErrs, field.Invalid(strategy, spec.UpdateStrategy,
			"must be 'RollingUpdate' or 'OnDelete'"))
	}
	if spec.Replicas != nil {
		allErrs = append(allErrs, validateNonnegative(int64(*spec.Replicas), fldPath.Child("replicas"))...)
	}
	allErrs = append(allErrs, validateNonnegative(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		allErrs = append(allErrs, validateNonnegative(int64(*spec.RevisionHistoryLimit), fldPath.Child("revisionHistoryLimit"))...)
	}
	allErrs = append(allErrs, validateWorkloadSelector(spec.Selector, "statefulset", fldPath.Child("selector"))...)
	if selector, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && spec.Selector != nil {
		allErrs = append(allErrs, validateTemplateForReplicaSet(&spec.Template, selector, "StatefulSet", fldPath.Child("template"))...)
	}
	return allErrs
}

func validateStatefulSetUpdate(sts, old *appsv1.StatefulSet) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&sts.ObjectMeta, &old.ObjectMeta)
	allErrs = append(allErrs, validateStatefulSetSpec(&sts.Spec, specPath)...)
	// Compare the specs with the fields that may change taken out.
	mutable := func(s appsv1.StatefulSetSpec) appsv1.StatefulSetSpec {
		s.Replicas, s.Ordinals, s.Template, s.UpdateStrategy = nil, nil, old.Spec.Template, appsv1.StatefulSetUpdateStrategy{}
		s.RevisionHistoryLimit, s.PersistentVolumeClaimRetentionPolicy, s.MinReadySeconds = nil, nil, 0
		return s
	}
	if !equality.Semantic.DeepEqual(mutable(sts.Spec), mutable(old.Spec)) {
		allErrs = append(allErrs, field.Forbidden(specPath, "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"))
	}
	return allErrs
}

func validateStatefulSetStatusUpdate(sts, old *appsv1.StatefulSet) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&sts.ObjectMeta, &old.ObjectMeta)
	s := &sts.Status
	for _, c := range []counter{
		{"replicas", int64(s.Replicas)}, {"readyReplicas", int64(s.ReadyReplicas)},
		{"currentReplicas", int64(s.CurrentReplicas)}, {"updatedReplicas", int64(s.UpdatedReplicas)},
		{"availableReplicas", int64(s.AvailableReplicas)}, {"observedGeneration", s.ObservedGeneration},
	} {
		allErrs = append(allErrs, validateNonnegative(c.value, statusPath.Child(c.name))...)
	}
	if s.CollisionCount != nil {
		allErrs = append(allErrs, validateNonnegative(int64(*s.CollisionCount), statusPath.Child("collisionCount"))...)
	}
	return allErrs
}
