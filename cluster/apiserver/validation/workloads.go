package validation

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// The workload controllers find their Pods by label selector, so every
// workload must have a selector that matches its own template: otherwise it
// would create Pods it cannot see and keep creating them forever. In apps/v1
// the selector is immutable, because changing it would orphan the Pods it
// already has (the Deployment, ReplicaSet and DaemonSet strategies enforce
// this, not the shared validation code).

func validateDeployment(d *appsv1.Deployment) field.ErrorList {
	allErrs := validateObjectMeta(&d.ObjectMeta, true, nameIsDNSSubdomain)
	return append(allErrs, validateDeploymentSpec(&d.Spec, specPath)...)
}

func validateDeploymentUpdate(d, old *appsv1.Deployment) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&d.ObjectMeta, &old.ObjectMeta)
	allErrs = append(allErrs, validateDeploymentSpec(&d.Spec, specPath)...)
	return append(allErrs, validateImmutable(d.Spec.Selector, old.Spec.Selector, specPath.Child("selector"))...)
}

func validateDeploymentSpec(spec *appsv1.DeploymentSpec, fldPath *field.Path) field.ErrorList {
	replicas := ptr.Deref(spec.Replicas, 1)
	allErrs := validateNonnegative(int64(replicas), fldPath.Child("replicas"))
	allErrs = append(allErrs, validateWorkloadSelector(spec.Selector, "deployment", fldPath.Child("selector"))...)
	if selector, err := metav1.LabelSelectorAsSelector(spec.Selector); err != nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("selector"), spec.Selector, "invalid label selector"))
	} else {
		allErrs = append(allErrs, validateTemplateForReplicaSet(&spec.Template, selector, "ReplicaSet", fldPath.Child("template"))...)
	}
	allErrs = append(allErrs, validateDeploymentStrategy(&spec.Strategy, fldPath.Child("strategy"))...)
	allErrs = append(allErrs, validateNonnegative(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		allErrs = append(allErrs, validateNonnegative(int64(*spec.RevisionHistoryLimit), fldPath.Child("revisionHistoryLimit"))...)
	}
	if p := spec.ProgressDeadlineSeconds; p != nil {
		allErrs = append(allErrs, validateNonnegative(int64(*p), fldPath.Child("progressDeadlineSeconds"))...)
		if *p <= spec.MinReadySeconds {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("progressDeadlineSeconds"), spec.ProgressDeadlineSeconds, "must be greater than minReadySeconds"))
		}
	}
	return allErrs
}

// validateWorkloadSelector requires a selector that selects something. A
// Deployment's and a ReplicaSet's empty-selector message both say
// "deployment", as upstream's do.
func validateWorkloadSelector(selector *metav1.LabelSelector, kind string, fldPath *field.Path) field.ErrorList {
	if selector == nil {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	allErrs := metav1validation.ValidateLabelSelector(selector, metav1validation.LabelSelectorValidationOptions{}, fldPath)
	if len(selector.MatchLabels)+len(selector.MatchExpressions) == 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, selector, "empty selector is invalid for "+kind))
	}
	return allErrs
}

// validateTemplateForReplicaSet checks the template of a Deployment or
// ReplicaSet: labels its selector matches, and Pods that run for ever.
func validateTemplateForReplicaSet(t *corev1.PodTemplateSpec, selector labels.Selector, kind string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if !selector.Empty() && !selector.Matches(labels.Set(t.Labels)) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("metadata", "labels"), t.Labels, "`selector` does not match template `labels`"))
	}
	allErrs = append(allErrs, validatePodTemplateSpec(t, fldPath)...)
	allErrs = append(allErrs, validateTemplateRunsForever(&t.Spec, kind, fldPath.Child("spec"))...)
	return allErrs
}

// validateTemplateRunsForever: a controller that keeps N Pods running
// cannot use Pods that stop on purpose.
func validateTemplateRunsForever(spec *corev1.PodSpec, kind string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.RestartPolicy != corev1.RestartPolicyAlways {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("restartPolicy"), spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	if spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("activeDeadlineSeconds"), "activeDeadlineSeconds in "+kind+" is not Supported"))
	}
	return allErrs
}

func validateDeploymentStrategy(s *appsv1.DeploymentStrategy, fldPath *field.Path) field.ErrorList {
	switch s.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if s.RollingUpdate != nil {
			return field.ErrorList{field.Forbidden(fldPath.Child("rollingUpdate"), "may not be specified when strategy `type` is '"+string(appsv1.RecreateDeploymentStrategyType)+"'")}
		}
	case appsv1.RollingUpdateDeploymentStrategyType:
		if s.RollingUpdate == nil {
			return field.ErrorList{field.Required(fldPath.Child("rollingUpdate"), "this should be defaulted and never be nil")}
		}
		return validateRollingUpdateDeployment(s.RollingUpdate, fldPath.Child("rollingUpdate"))
	default:
		valid := []string{string(appsv1.RecreateDeploymentStrategyType), string(appsv1.RollingUpdateDeploymentStrategyType)}
		return field.ErrorList{field.NotSupported(fldPath, s, valid)}
	}
	return nil
}

// validateRollingUpdateDeployment: a rollout must be able to make progress,
// so it may not forbid both extra Pods (maxSurge) and missing ones
// (maxUnavailable).
func validateRollingUpdateDeployment(ru *appsv1.RollingUpdateDeployment, fldPath *field.Path) field.ErrorList {
	maxUnavailable := ptr.Deref(ru.MaxUnavailable, intstr.FromInt32(0))
	maxSurge := ptr.Deref(ru.MaxSurge, intstr.FromInt32(0))
	allErrs := validatePositiveIntOrPercent(maxUnavailable, fldPath.Child("maxUnavailable"))
	allErrs = append(allErrs, validatePositiveIntOrPercent(maxSurge, fldPath.Child("maxSurge"))...)
	if intOrPercentValue(maxUnavailable) == 0 && intOrPercentValue(maxSurge) == 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxUnavailable"), maxUnavailable, "may not be 0 when `maxSurge` is 0"))
	}
	return append(allErrs, isNotMoreThan100Percent(maxUnavailable, fldPath.Child("maxUnavailable"))...)
}

func validatePositiveIntOrPercent(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	switch v.Type {
	case intstr.String:
		var allErrs field.ErrorList
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			allErrs = append(allErrs, field.Invalid(fldPath, v, msg))
		}
		return allErrs
	case intstr.Int:
		return validateNonnegative(int64(v.IntValue()), fldPath)
	}
	return field.ErrorList{field.Invalid(fldPath, v, "must be an integer or percentage (e.g '5%%')")}
}

// percentValue returns the number in "25%", if v is a valid percentage.
func percentValue(v intstr.IntOrString) (int, bool) {
	if v.Type != intstr.String || len(validation.IsValidPercent(v.StrVal)) != 0 {
		return 0, false
	}
	n, _ := strconv.Atoi(v.StrVal[:len(v.StrVal)-1])
	return n, true
}

func intOrPercentValue(v intstr.IntOrString) int {
	if n, ok := percentValue(v); ok {
		return n
	}
	return v.IntValue()
}

func isNotMoreThan100Percent(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if n, ok := percentValue(v); ok && n > 100 {
		return field.ErrorList{field.Invalid(fldPath, v, "must not be greater than 100%")}
	}
	return nil
}

func validateDeploymentStatusUpdate(d, old *appsv1.Deployment) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&d.ObjectMeta, &old.ObjectMeta)
	s := &d.Status
	for _, c := range []counter{
		{"observedGeneration", s.ObservedGeneration}, {"replicas", int64(s.Replicas)},
		{"updatedReplicas", int64(s.UpdatedReplicas)}, {"readyReplicas", int64(s.ReadyReplicas)},
		{"availableReplicas", int64(s.AvailableReplicas)}, {"unavailableReplicas", int64(s.UnavailableReplicas)},
	} {
		allErrs = append(allErrs, validateNonnegative(c.value, statusPath.Child(c.name))...)
	}
	if s.CollisionCount != nil {
		allErrs = append(allErrs, validateNonnegative(int64(*s.CollisionCount), statusPath.Child("collisionCount"))...)
	}
	allErrs = append(allErrs, notAboveReplicas(s.Replicas, statusPath, "updatedReplicas", s.UpdatedReplicas)...)
	allErrs = append(allErrs, notAboveReplicas(s.Replicas, statusPath, "readyReplicas", s.ReadyReplicas)...)
	allErrs = append(allErrs, notAboveReplicas(s.Replicas, statusPath, "availableReplicas", s.AvailableReplicas)...)
	if s.AvailableReplicas > s.ReadyReplicas {
		allErrs = append(allErrs, field.Invalid(statusPath.Child("availableReplicas"), s.AvailableReplicas, "cannot be greater than readyReplicas"))
	}
	return append(allErrs, validateCollisionCountUpdate(s.CollisionCount, old.Status.CollisionCount)...)
}

// counter is one count in a status, for checking a list of them at once.
type counter struct {
	name  string
	value int64
}

func notAboveReplicas(replicas int32, fldPath *field.Path, name string, value int32) field.ErrorList {
	if value > replicas {
		return field.ErrorList{field.Invalid(fldPath.Child(name), value, "cannot be greater than status.replicas")}
	}
	return nil
}

// validateCollisionCountUpdate: the count of template-hash collisions only
// grows, so a controller never reuses a name.
func validateCollisionCountUpdate(count, old *int32) field.ErrorList {
	if old != nil && (count == nil || *count < *old) {
		return field.ErrorList{field.Invalid(statusPath.Child("collisionCount"), ptr.Deref(count, 0), "cannot be decremented")}
	}
	return nil
}

func validateReplicaSet(rs *appsv1.ReplicaSet) field.ErrorList {
	allErrs := validateObjectMeta(&rs.ObjectMeta, true, nameIsDNSSubdomain)
	return append(allErrs, validateReplicaSetSpec(&rs.Spec, specPath)...)
}

func validateReplicaSetUpdate(rs, old *appsv1.ReplicaSet) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&rs.ObjectMeta, &old.ObjectMeta)
	allErrs = append(allErrs, validateReplicaSetSpec(&rs.Spec, specPath)...)
	return append(allErrs, validateImmutable(rs.Spec.Selector, old.Spec.Selector, specPath.Child("selector"))...)
}

func validateReplicaSetSpec(spec *appsv1.ReplicaSetSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateNonnegative(int64(ptr.Deref(spec.Replicas, 1)), fldPath.Child("replicas"))
	allErrs = append(allErrs, validateNonnegative(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	allErrs = append(allErrs, validateWorkloadSelector(spec.Selector, "deployment", fldPath.Child("selector"))...)
	if selector, err := metav1.LabelSelectorAsSelector(spec.Selector); err != nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("selector"), spec.Selector, "invalid label selector"))
	} else {
		allErrs = append(allErrs, validateTemplateForReplicaSet(&spec.Template, selector, "ReplicaSet", fldPath.Child("template"))...)
	}
	return allErrs
}

func validateReplicaSetStatusUpdate(rs, old *appsv1.ReplicaSet) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&rs.ObjectMeta, &old.ObjectMeta)
	s := &rs.Status
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

func validateDaemonSet(ds *appsv1.DaemonSet) field.ErrorList {
	allErrs := validateObjectMeta(&ds.ObjectMeta, true, nameIsDNSSubdomain)
	return append(allErrs, validateDaemonSetSpec(&ds.Spec, specPath)...)
}

func validateDaemonSetUpdate(ds, old *appsv1.DaemonSet) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&ds.ObjectMeta, &old.ObjectMeta)
	allErrs = append(allErrs, validateDaemonSetSpec(&ds.Spec, specPath)...)
	return append(allErrs, validateImmutable(ds.Spec.Selector, old.Spec.Selector, specPath.Child("selector"))...)
}

func validateDaemonSetSpec(spec *appsv1.DaemonSetSpec, fldPath *field.Path) field.ErrorList {
	allErrs := metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))
	if selector, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !selector.Matches(labels.Set(spec.Template.Labels)) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	if spec.Selector != nil && len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("selector"), spec.Selector, "empty selector is invalid for daemonset"))
	}
	allErrs = append(allErrs, validatePodTemplateSpec(&spec.Template, fldPath.Child("template"))...)
	allErrs = append(allErrs, validateTemplateRunsForever(&spec.Template.Spec, "DaemonSet", fldPath.Child("template", "spec"))...)
	allErrs = append(allErrs, validateNonnegative(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	allErrs = append(allErrs, validateDaemonSetUpdateStrategy(&spec.UpdateStrategy, fldPath.Child("updateStrategy"))...)
	if spec.RevisionHistoryLimit != nil {
		allErrs = append(allErrs, validateNonnegative(int64(*spec.RevisionHistoryLimit), fldPath.Child("revisionHistoryLimit"))...)
	}
	return allErrs
}

func validateDaemonSetUpdateStrategy(s *appsv1.DaemonSetUpdateStrategy, fldPath *field.Path) field.ErrorList {
	switch s.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
	case appsv1.RollingUpdateDaemonSetStrategyType:
		if s.RollingUpdate == nil {
			return field.ErrorList{field.Required(fldPath.Child("rollingUpdate"), "")}
		}
		return validateRollingUpdateDaemonSet(s.RollingUpdate, fldPath.Child("rollingUpdate"))
	default:
		valid := []string{string(appsv1.RollingUpdateDaemonSetStrategyType), string(appsv1.OnDeleteDaemonSetStrategyType)}
		return field.ErrorList{field.NotSupported(fldPath, s, valid)}
	}
	return nil
}

// validateRollingUpdateDaemonSet: a DaemonSet replaces a node's Pod either
// by stopping it first (maxUnavailable) or by starting the new one next to
// it (maxSurge), so exactly one of the two is non-zero.
func validateRollingUpdateDaemonSet(ru *appsv1.RollingUpdateDaemonSet, fldPath *field.Path) field.ErrorList {
	maxUnavailable := ptr.Deref(ru.MaxUnavailable, intstr.FromInt32(0))
	maxSurge := ptr.Deref(ru.MaxSurge, intstr.FromInt32(0))
	allErrs := validatePositiveIntOrPercent(maxUnavailable, fldPath.Child("maxUnavailable"))
	allErrs = append(allErrs, validatePositiveIntOrPercent(maxSurge, fldPath.Child("maxSurge"))...)
	allErrs = append(allErrs, isNotMoreThan100Percent(maxUnavailable, fldPath.Child("maxUnavailable"))...)
	allErrs = append(allErrs, isNotMoreThan100Percent(maxSurge, fldPath.Child("maxSurge"))...)
	hasUnavailable := intOrPercentValue(maxUnavailable) != 0
	hasSurge := intOrPercentValue(maxSurge) != 0
	switch {
	case hasUnavailable && hasSurge:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxSurge"), ru.MaxSurge, "may not be set when maxUnavailable is non-zero"))
	case !hasUnavailable && !hasSurge:
		allErrs = append(allErrs, field.Required(fldPath.Child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
	}
	return allErrs
}

func validateDaemonSetStatusUpdate(ds, old *appsv1.DaemonSet) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&ds.ObjectMeta, &old.ObjectMeta)
	s := &ds.Status
	for _, c := range []counter{
		{"currentNumberScheduled", int64(s.CurrentNumberScheduled)}, {"numberMisscheduled", int64(s.NumberMisscheduled)},
		{"desiredNumberScheduled", int64(s.DesiredNumberScheduled)}, {"numberReady", int64(s.NumberReady)},
		{"observedGeneration", s.ObservedGeneration}, {"updatedNumberScheduled", int64(s.UpdatedNumberScheduled)},
		{"numberAvailable", int64(s.NumberAvailable)}, {"numberUnavailable", int64(s.NumberUnavailable)},
	} {
		allErrs = append(allErrs, validateNonnegative(c.value, statusPath.Child(c.name))...)
	}
	if s.CollisionCount != nil {
		allErrs = append(allErrs, validateNonnegative(int64(*s.CollisionCount), statusPath.Child("collisionCount"))...)
	}
	return append(allErrs, validateCollisionCountUpdate(s.CollisionCount, old.Status.CollisionCount)...)
}
