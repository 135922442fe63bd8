package validation

import (
	"fmt"
	"slices"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/klab-dev/klab/cluster/apiserver/hpaconv"
)

// HorizontalPodAutoscaler validation, as upstream's
// pkg/apis/autoscaling/validation for the resource metrics klab serves.

var hpaMetricTypes = []string{string(autoscalingv2.ObjectMetricSourceType), string(autoscalingv2.PodsMetricSourceType),
	string(autoscalingv2.ResourceMetricSourceType), string(autoscalingv2.ExternalMetricSourceType), string(autoscalingv2.ContainerResourceMetricSourceType)}

func validateHPA(hpa *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	allErrs := validateObjectMeta(&hpa.ObjectMeta, true, nameIsDNSSubdomain)
	return append(allErrs, validateHPASpec(&hpa.Spec, specPath)...)
}

// An autoscaling/v1 HPA is checked as the v2 object it converts to, as
// upstream checks the internal one: the errors name v2's fields.
func asV2(check func(obj, old *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList) func(obj, old *autoscalingv1.HorizontalPodAutoscaler) field.ErrorList {
	return func(obj, old *autoscalingv1.HorizontalPodAutoscaler) field.ErrorList {
		return check(hpaconv.ToV2(obj), hpaconv.ToV2(old))
	}
}

func validateHPAUpdate(hpa, old *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&hpa.ObjectMeta, &old.ObjectMeta)
	return append(allErrs, validateHPASpec(&hpa.Spec, specPath)...)
}

func validateHPAStatusUpdate(hpa, old *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&hpa.ObjectMeta, &old.ObjectMeta)
	allErrs = append(allErrs, validateNonnegative(int64(hpa.Status.CurrentReplicas), statusPath.Child("currentReplicas"))...)
	return append(allErrs, validateNonnegative(int64(hpa.Status.DesiredReplicas), statusPath.Child("desiredReplicas"))...)
}

func validateHPASpec(spec *autoscalingv2.HorizontalPodAutoscalerSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.MinReplicas != nil && *spec.MinReplicas < 1 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("minReplicas"), *spec.MinReplicas, "must be greater than or equal to 1"))
	}
	if spec.MaxReplicas < 1 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxReplicas"), spec.MaxReplicas, "must be greater than 0"))
	}
	if spec.MinReplicas != nil && spec.MaxReplicas < *spec.MinReplicas {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxReplicas"), spec.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	ref := fldPath.Child("scaleTargetRef")
	if spec.ScaleTargetRef.Kind == "" {
		allErrs = append(allErrs, field.Required(ref.Child("kind"), ""))
	} else {
		for _, msg := range path.IsValidPathSegmentName(spec.ScaleTargetRef.Kind) {
			allErrs = append(allErrs, field.Invalid(ref.Child("kind"), spec.ScaleTargetRef.Kind, msg))
		}
	}
	if spec.ScaleTargetRef.Name == "" {
		allErrs = append(allErrs, field.Required(ref.Child("name"), ""))
	} else {
		for _, msg := range path.IsValidPathSegmentName(spec.ScaleTargetRef.Name) {
			allErrs = append(allErrs, field.Invalid(ref.Child("name"), spec.ScaleTargetRef.Name, msg))
		}
	}
	for i, m := range spec.Metrics {
		allErrs = append(allErrs, validateMetricSpec(m, fldPath.Child("metrics").Index(i))...)
	}
	if b := spec.Behavior; b != nil {
		behavior := fldPath.Child("behavior")
		allErrs = append(allErrs, validateScalingRules(b.ScaleUp, behavior.Child("scaleUp"))...)
		allErrs = append(allErrs, validateScalingRules(b.ScaleDown, behavior.Child("scaleDown"))...)
	}
	return allErrs
}

// Upstream's bounds on spec.behavior: a stabilization window of at most an
// hour, a policy period of at most half an hour.
const (
	maxStabilizationWindowSeconds = 3600
	maxPolicyPeriodSeconds        = 1800
)

var (
	hpaSelectPolicies = []string{string(autoscalingv2.DisabledPolicySelect), string(autoscalingv2.MaxChangePolicySelect), string(autoscalingv2.MinChangePolicySelect)}
	hpaPolicyTypes    = []string{string(autoscalingv2.PercentScalingPolicy), string(autoscalingv2.PodsScalingPolicy)}
)

// validateScalingRules checks one direction of spec.behavior as upstream
// does: the window's range, a known selectPolicy, and at least one policy,
// each of a known type with a positive value and a period within bounds.
func validateScalingRules(r *autoscalingv2.HPAScalingRules, fldPath *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var allErrs field.ErrorList
	if w := r.StabilizationWindowSeconds; w != nil {
		if *w < 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("stabilizationWindowSeconds"), *w, "must be greater than or equal to zero"))
		} else if *w > maxStabilizationWindowSeconds {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("stabilizationWindowSeconds"), *w, fmt.Sprintf("must be less than or equal to %d", maxStabilizationWindowSeconds)))
		}
	}
	if sp := r.SelectPolicy; sp != nil && !slices.Contains(hpaSelectPolicies, string(*sp)) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("selectPolicy"), *sp, hpaSelectPolicies))
	}
	policies := fldPath.Child("policies")
	if len(r.Policies) == 0 {
		allErrs = append(allErrs, field.Required(policies, "must specify at least one Policy"))
	}
	for i, p := range r.Policies {
		at := policies.Index(i)
		if !slices.Contains(hpaPolicyTypes, string(p.Type)) {
			allErrs = append(allErrs, field.NotSupported(at.Child("type"), p.Type, hpaPolicyTypes))
		}
		if p.Value <= 0 {
			allErrs = append(allErrs, field.Invalid(at.Child("value"), p.Value, "must be greater than zero"))
		}
		if p.PeriodSeconds <= 0 {
			allErrs = append(allErrs, field.Invalid(at.Child("periodSeconds"), p.PeriodSeconds, "must be greater than zero"))
		} else if p.PeriodSeconds > maxPolicyPeriodSeconds {
			allErrs = append(allErrs, field.Invalid(at.Child("periodSeconds"), p.PeriodSeconds, fmt.Sprintf("must be less than or equal to %d", maxPolicyPeriodSeconds)))
		}
	}
	return allErrs
}

func validateMetricSpec(m autoscalingv2.MetricSpec, fldPath *field.Path) field.ErrorList {
	if m.Type == "" {
		return field.ErrorList{field.Required(fldPath.Child("type"), "must specify a metric source type")}
	}
	if m.Type != autoscalingv2.ResourceMetricSourceType {
		known := false
		for _, t := range hpaMetricTypes {
			known = known || string(m.Type) == t
		}
		if !known {
			return field.ErrorList{field.NotSupported(fldPath.Child("type"), m.Type, hpaMetricTypes)}
		}
		return nil // served but not acted on: klab's controller reads resource metrics only
	}
	if m.Resource == nil {
		return field.ErrorList{field.Required(fldPath.Child("resource"), "must populate information for the given metric source")}
	}
	var allErrs field.ErrorList
	r := fldPath.Child("resource")
	if m.Resource.Name == "" {
		allErrs = append(allErrs, field.Required(r.Child("name"), "must specify a resource name"))
	}
	t := r.Child("target")
	target := m.Resource.Target
	switch target.Type {
	case autoscalingv2.UtilizationMetricType:
		if target.AverageUtilization == nil {
			allErrs = append(allErrs, field.Required(t.Child("averageUtilization"), "must set either a target raw value or a target utilization"))
		} else if *target.AverageUtilization < 1 {
			allErrs = append(allErrs, field.Invalid(t.Child("averageUtilization"), *target.AverageUtilization, "must be greater than 0"))
		}
	case autoscalingv2.AverageValueMetricType:
		if target.AverageValue == nil {
			allErrs = append(allErrs, field.Required(t.Child("averageValue"), "must set either a target raw value or a target utilization"))
		} else if target.AverageValue.Sign() <= 0 {
			allErrs = append(allErrs, field.Invalid(t.Child("averageValue"), target.AverageValue.String(), "must be positive"))
		}
	case "":
		allErrs = append(allErrs, field.Required(t.Child("type"), "must specify a metric target type"))
	default:
		allErrs = append(allErrs, field.Invalid(t.Child("type"), target.Type, "must be either Utilization, Value, or AverageValue"))
	}
	if target.AverageUtilization != nil && target.AverageValue != nil {
		allErrs = append(allErrs, field.Forbidden(t.Child("averageValue"), "may not set both a target raw value and a target utilization"))
	}
	return allErrs
}
