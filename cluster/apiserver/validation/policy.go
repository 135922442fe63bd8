package validation

import (
	policyv1 "k8s.io/api/policy/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A PodDisruptionBudget says how many of the Pods it selects must stay
// up (minAvailable) or may be down (maxUnavailable) during voluntary
// disruptions, as a number or a percentage; one of the two, never both.
// Unlike policy/v1beta1, policy/v1 lets its spec change after creation.

var unhealthyPodEvictionPolicies = []string{string(policyv1.AlwaysAllow), string(policyv1.IfHealthyBudget)}

func validatePodDisruptionBudget(pdb *policyv1.PodDisruptionBudget) field.ErrorList {
	allErrs := validateObjectMeta(&pdb.ObjectMeta, true, nameIsDNSSubdomain)
	return append(allErrs, validatePodDisruptionBudgetSpec(&pdb.Spec, specPath)...)
}

func validatePodDisruptionBudgetUpdate(pdb, old *policyv1.PodDisruptionBudget) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&pdb.ObjectMeta, &old.ObjectMeta)
	return append(allErrs, validatePodDisruptionBudgetSpec(&pdb.Spec, specPath)...)
}

func validatePodDisruptionBudgetSpec(spec *policyv1.PodDisruptionBudgetSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.MinAvailable != nil && spec.MaxUnavailable != nil {
		allErrs = append(allErrs, field.Invalid(fldPath, spec, "minAvailable and maxUnavailable cannot be both set"))
	}
	if spec.MinAvailable != nil {
		allErrs = append(allErrs, validatePositiveIntOrPercent(*spec.MinAvailable, fldPath.Child("minAvailable"))...)
		allErrs = append(allErrs, isNotMoreThan100Percent(*spec.MinAvailable, fldPath.Child("minAvailable"))...)
	}
	if spec.MaxUnavailable != nil {
		allErrs = append(allErrs, validatePositiveIntOrPercent(*spec.MaxUnavailable, fldPath.Child("maxUnavailable"))...)
		allErrs = append(allErrs, isNotMoreThan100Percent(*spec.MaxUnavailable, fldPath.Child("maxUnavailable"))...)
	}
	allErrs = append(allErrs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
	if p := spec.UnhealthyPodEvictionPolicy; p != nil && *p != policyv1.AlwaysAllow && *p != policyv1.IfHealthyBudget {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("unhealthyPodEvictionPolicy"), *p, unhealthyPodEvictionPolicies))
	}
	return allErrs
}

func validatePodDisruptionBudgetStatusUpdate(pdb, old *policyv1.PodDisruptionBudget) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&pdb.ObjectMeta, &old.ObjectMeta)
	s := &pdb.Status
	allErrs = append(allErrs, metav1validation.ValidateConditions(s.Conditions, statusPath.Child("conditions"))...)
	for _, c := range []counter{
		{"disruptionsAllowed", int64(s.DisruptionsAllowed)}, {"currentHealthy", int64(s.CurrentHealthy)},
		{"desiredHealthy", int64(s.DesiredHealthy)}, {"expectedPods", int64(s.ExpectedPods)},
	} {
		allErrs = append(allErrs, validateNonnegative(c.value, statusPath.Child(c.name))...)
	}
	return allErrs
}
