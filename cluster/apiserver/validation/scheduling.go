package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateTolerations checks the taints a Pod tolerates. An empty key with
// operator Exists tolerates every taint; otherwise Equal compares a label
// value and Exists must not name one. Only NoExecute taints evict, so only
// they can be tolerated for a limited time.
func validateTolerations(tolerations []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, t := range tolerations {
		idxPath := fldPath.Index(i)
		if t.Key != "" {
			allErrs = append(allErrs, metav1validation.ValidateLabelName(t.Key, idxPath.Child("key"))...)
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("operator"), t.Operator,
				"operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "": // empty means Equal
			if errs := validation.IsValidLabelValue(t.Value); len(errs) != 0 {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("operator"), t.Value, strings.Join(errs, ";")))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("operator"), t.Operator,
				[]corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		if t.Effect != "" {
			allErrs = append(allErrs, validateTaintEffect(t.Effect, idxPath.Child("effect"))...)
		}
	}
	return allErrs
}

var taintEffects = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}

func validateTaintEffect(effect corev1.TaintEffect, fldPath *field.Path) field.ErrorList {
	return validateEnum(effect, taintEffects, fldPath)
}

func validateAffinity(a *corev1.Affinity, fldPath *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var allErrs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		naPath := fldPath.Child("nodeAffinity")
		if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			allErrs = append(allErrs, validateNodeSelector(na.RequiredDuringSchedulingIgnoredDuringExecution, false, naPath.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		}
		for i, term := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			termPath := naPath.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			allErrs = append(allErrs, validateWeight(term.Weight, termPath.Child("weight"))...)
			// A preferred term may name a label value no node has yet.
			allErrs = append(allErrs, validateNodeSelectorTerm(term.Preference, true, termPath.Child("preference"))...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		allErrs = append(allErrs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, fldPath.Child("podAffinity"))...)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		allErrs = append(allErrs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, fldPath.Child("podAntiAffinity"))...)
	}
	return allErrs
}

func validateWeight(weight int32, fldPath *field.Path) field.ErrorList {
	if weight <= 0 || weight > 100 {
		return field.ErrorList{field.Invalid(fldPath, weight, "must be in the range 1-100")}
	}
	return nil
}

func validateNodeSelector(ns *corev1.NodeSelector, allowInvalidValues bool, fldPath *field.Path) field.ErrorList {
	termsPath := fldPath.Child("nodeSelectorTerms")
	if len(ns.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(termsPath, "must have at least one node selector term")}
	}
	var allErrs field.ErrorList
	for i, term := range ns.NodeSelectorTerms {
		allErrs = append(allErrs, validateNodeSelectorTerm(term, allowInvalidValues, termsPath.Index(i))...)
	}
	return allErrs
}

func validateNodeSelectorTerm(term corev1.NodeSelectorTerm, allowInvalidValues bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, req := range term.MatchExpressions {
		allErrs = append(allErrs, validateNodeSelectorRequirement(req, allowInvalidValues, fldPath.Child("matchExpressions").Index(i))...)
	}
	for i, req := range term.MatchFields {
		allErrs = append(allErrs, validateNodeFieldSelectorRequirement(req, fldPath.Child("matchFields").Index(i))...)
	}
	return allErrs
}

func validateNodeSelectorRequirement(req corev1.NodeSelectorRequirement, allowInvalidValues bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch req.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(req.Values) == 0 {
			allErrs = append(allErrs, field.Required(fldPath.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(req.Values) > 0 {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(req.Values) != 1 {
			allErrs = append(allErrs, field.Required(fldPath.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
		}
	default:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("operator"), req.Operator, "not a valid selector operator"))
	}
	allErrs = append(allErrs, metav1validation.ValidateLabelName(req.Key, fldPath.Child("key"))...)
	if !allowInvalidValues {
		for i, v := range req.Values {
			allErrs = append(allErrs, invalidEach(fldPath.Child("values").Index(i), v, validation.IsValidLabelValue(v))...)
		}
	}
	return allErrs
}

// validateNodeFieldSelectorRequirement: the only node field a Pod may
// select on is metadata.name, and only with one value.
func validateNodeFieldSelectorRequirement(req corev1.NodeSelectorRequirement, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch req.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(req.Values) != 1 {
			allErrs = append(allErrs, field.Required(fldPath.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
		}
	default:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("operator"), req.Operator, "not a valid selector operator"))
	}
	if req.Key != metav1.ObjectNameField {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("key"), req.Key, "not a valid field selector key"))
	} else {
		for i, v := range req.Values {
			allErrs = append(allErrs, validateNameWith(nameIsDNSSubdomain, v, fldPath.Child("values").Index(i))...)
		}
	}
	return allErrs
}

func validatePodAffinityTerms(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, term := range required {
		allErrs = append(allErrs, validatePodAffinityTerm(term, fldPath.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i))...)
	}
	for i, wt := range preferred {
		termPath := fldPath.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
		allErrs = append(allErrs, validateWeight(wt.Weight, termPath.Child("weight"))...)
		allErrs = append(allErrs, validatePodAffinityTerm(wt.PodAffinityTerm, termPath.Child("podAffinityTerm"))...)
	}
	return allErrs
}

// validatePodAffinityTerm checks one "near (or away from) Pods like these"
// rule. The namespaces path is singular in upstream's message too.
func validatePodAffinityTerm(term corev1.PodAffinityTerm, fldPath *field.Path) field.ErrorList {
	opts := metav1validation.LabelSelectorValidationOptions{}
	allErrs := metav1validation.ValidateLabelSelector(term.LabelSelector, opts, fldPath.Child("labelSelector"))
	allErrs = append(allErrs, metav1validation.ValidateLabelSelector(term.NamespaceSelector, opts, fldPath.Child("namespaceSelector"))...)
	for _, ns := range term.Namespaces {
		allErrs = append(allErrs, validateNameWith(nameIsDNSLabel, ns, fldPath.Child("namespace"))...)
	}
	allErrs = append(allErrs, validateLabelKeys(fldPath.Child("matchLabelKeys"), term.MatchLabelKeys, term.LabelSelector)...)
	allErrs = append(allErrs, validateLabelKeys(fldPath.Child("mismatchLabelKeys"), term.MismatchLabelKeys, term.LabelSelector)...)
	mismatch := map[string]bool{}
	for _, k := range term.MismatchLabelKeys {
		mismatch[k] = true
	}
	for i, k := range term.MatchLabelKeys {
		if mismatch[k] {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("matchLabelKeys").Index(i), k, "exists in both matchLabelKeys and mismatchLabelKeys"))
		}
	}
	if term.TopologyKey == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("topologyKey"), "can not be empty"))
	}
	return append(allErrs, metav1validation.ValidateLabelName(term.TopologyKey, fldPath.Child("topologyKey"))...)
}

func validateLabelKeys(fldPath *field.Path, keys []string, selector *metav1.LabelSelector) field.ErrorList {
	if len(keys) == 0 {
		return nil
	}
	if selector == nil {
		return field.ErrorList{field.Forbidden(fldPath, "must not be specified when labelSelector is not set")}
	}
	var allErrs field.ErrorList
	for i, k := range keys {
		allErrs = append(allErrs, metav1validation.ValidateLabelName(k, fldPath.Index(i))...)
	}
	return allErrs
}

// validateTopologySpreadConstraints checks rules that spread matching Pods
// evenly over topology domains (zones, nodes).
func validateTopologySpreadConstraints(constraints []corev1.TopologySpreadConstraint, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	policies := []corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore}
	for i, c := range constraints {
		p := fldPath.Index(i)
		if c.MaxSkew <= 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("maxSkew"), c.MaxSkew, "must be greater than zero"))
		}
		if c.TopologyKey == "" {
			allErrs = append(allErrs, field.Required(p.Child("topologyKey"), "can not be empty"))
		}
		actions := []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}
		if !slices.Contains(actions, c.WhenUnsatisfiable) {
			allErrs = append(allErrs, field.NotSupported(p.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, actions))
		}
		for _, later := range constraints[i+1:] {
			if c.TopologyKey == later.TopologyKey && c.WhenUnsatisfiable == later.WhenUnsatisfiable {
				allErrs = append(allErrs, field.Duplicate(p.Child("{topologyKey, whenUnsatisfiable}"), fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
				break
			}
		}
		if c.MinDomains != nil {
			if *c.MinDomains <= 0 {
				allErrs = append(allErrs, field.Invalid(p.Child("minDomains"), c.MinDomains, "must be greater than zero"))
			}
			if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				allErrs = append(allErrs, field.Invalid(p.Child("minDomains"), c.MinDomains,
					fmt.Sprintf("can only use minDomains if whenUnsatisfiable=%s, not %s", corev1.DoNotSchedule, c.WhenUnsatisfiable)))
			}
		}
		if c.NodeAffinityPolicy != nil && !slices.Contains(policies, *c.NodeAffinityPolicy) {
			allErrs = append(allErrs, field.NotSupported(p.Child("nodeAffinityPolicy"), c.NodeAffinityPolicy, policies))
		}
		if c.NodeTaintsPolicy != nil && !slices.Contains(policies, *c.NodeTaintsPolicy) {
			allErrs = append(allErrs, field.NotSupported(p.Child("nodeTaintsPolicy"), c.NodeTaintsPolicy, policies))
		}
		allErrs = append(allErrs, validateMatchLabelKeysInTopologySpread(p.Child("matchLabelKeys"), c.MatchLabelKeys, c.LabelSelector)...)
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(c.LabelSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("labelSelector"))...)
	}
	return allErrs
}

func validateMatchLabelKeysInTopologySpread(fldPath *field.Path, keys []string, selector *metav1.LabelSelector) field.ErrorList {
	if len(keys) == 0 {
		return nil
	}
	var allErrs field.ErrorList
	inSelector := map[string]bool{}
	if selector != nil {
		for k := range selector.MatchLabels {
			inSelector[k] = true
		}
		for _, e := range selector.MatchExpressions {
			inSelector[e.Key] = true
		}
	} else {
		allErrs = append(allErrs, field.Forbidden(fldPath, "must not be specified when labelSelector is not set"))
	}
	for i, k := range keys {
		allErrs = append(allErrs, metav1validation.ValidateLabelName(k, fldPath.Index(i))...)
		if inSelector[k] {
			allErrs = append(allErrs, field.Invalid(fldPath.Index(i), k, "exists in both matchLabelKeys and labelSelector"))
		}
	}
	return allErrs
}
