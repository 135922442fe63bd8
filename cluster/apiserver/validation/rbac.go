package validation

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RBAC objects are named like a URL path segment, not a DNS name, so that
// names such as "system:node" are allowed (upstream's ValidateRBACName).
var nameIsPathSegment = pathSegmentName

// validateRole checks a Role: its metadata and its rules, which, being
// namespaced, may not name non-resource URLs.
func validateRole(role *rbacv1.Role) field.ErrorList {
	allErrs := validateObjectMeta(&role.ObjectMeta, true, nameIsPathSegment)
	for i := range role.Rules {
		allErrs = append(allErrs, validatePolicyRule(&role.Rules[i], true, field.NewPath("rules").Index(i))...)
	}
	return allErrs
}

func validateRoleUpdate(role, old *rbacv1.Role) field.ErrorList {
	return append(validateObjectMetaUpdate(&role.ObjectMeta, &old.ObjectMeta), validateRole(role)...)
}

// validateClusterRole checks a ClusterRole: metadata, rules, and an
// aggregation rule, which needs at least one valid selector.
func validateClusterRole(role *rbacv1.ClusterRole) field.ErrorList {
	allErrs := validateObjectMeta(&role.ObjectMeta, false, nameIsPathSegment)
	for i := range role.Rules {
		allErrs = append(allErrs, validatePolicyRule(&role.Rules[i], false, field.NewPath("rules").Index(i))...)
	}
	if role.AggregationRule != nil {
		selectorsPath := field.NewPath("aggregationRule", "clusterRoleSelectors")
		if len(role.AggregationRule.ClusterRoleSelectors) == 0 {
			allErrs = append(allErrs, field.Required(selectorsPath, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
		}
		opts := metav1validation.LabelSelectorValidationOptions{}
		for i := range role.AggregationRule.ClusterRoleSelectors {
			allErrs = append(allErrs, metav1validation.ValidateLabelSelector(&role.AggregationRule.ClusterRoleSelectors[i], opts, selectorsPath.Index(i))...)
		}
	}
	return allErrs
}

func validateClusterRoleUpdate(role, old *rbacv1.ClusterRole) field.ErrorList {
	return append(validateObjectMetaUpdate(&role.ObjectMeta, &old.ObjectMeta), validateClusterRole(role)...)
}

// validatePolicyRule checks one rule as upstream's ValidatePolicyRule does:
// some verb; either non-resource URLs alone (and only in a cluster role) or
// API groups and resources.
func validatePolicyRule(rule *rbacv1.PolicyRule, namespaced bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(rule.Verbs) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(rule.NonResourceURLs) > 0 {
		if namespaced {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return allErrs
	}
	if len(rule.APIGroups) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(rule.Resources) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("resources"), "resource rules must supply at least one resource"))
	}
	return allErrs
}

// validateRoleBinding checks a RoleBinding, which may refer to a Role of its
// namespace or to a ClusterRole.
func validateRoleBinding(b *rbacv1.RoleBinding) field.ErrorList {
	allErrs := validateObjectMeta(&b.ObjectMeta, true, nameIsPathSegment)
	allErrs = append(allErrs, validateRoleRef(b.RoleRef, []string{"Role", "ClusterRole"})...)
	for i := range b.Subjects {
		allErrs = append(allErrs, validateSubject(&b.Subjects[i], true, field.NewPath("subjects").Index(i))...)
	}
	return allErrs
}

func validateRoleBindingUpdate(b, old *rbacv1.RoleBinding) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&b.ObjectMeta, &old.ObjectMeta)
	if b.RoleRef != old.RoleRef {
		allErrs = append(allErrs, field.Invalid(field.NewPath("roleRef"), b.RoleRef, "cannot change roleRef"))
	}
	return append(allErrs, validateRoleBinding(b)...)
}

// validateClusterRoleBinding checks a ClusterRoleBinding, which refers to a
// ClusterRole only, and whose service account subjects name their
// namespace (there is no binding namespace to default to).
func validateClusterRoleBinding(b *rbacv1.ClusterRoleBinding) field.ErrorList {
	allErrs := validateObjectMeta(&b.ObjectMeta, false, nameIsPathSegment)
	allErrs = append(allErrs, validateRoleRef(b.RoleRef, []string{"ClusterRole"})...)
	for i := range b.Subjects {
		allErrs = append(allErrs, validateSubject(&b.Subjects[i], false, field.NewPath("subjects").Index(i))...)
	}
	return allErrs
}

func validateClusterRoleBindingUpdate(b, old *rbacv1.ClusterRoleBinding) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&b.ObjectMeta, &old.ObjectMeta)
	if b.RoleRef != old.RoleRef {
		allErrs = append(allErrs, field.Invalid(field.NewPath("roleRef"), b.RoleRef, "cannot change roleRef"))
	}
	return append(allErrs, validateClusterRoleBinding(b)...)
}

func validateRoleRef(ref rbacv1.RoleRef, kinds []string) field.ErrorList {
	var allErrs field.ErrorList
	refPath := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		allErrs = append(allErrs, field.NotSupported(refPath.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	supported := false
	for _, k := range kinds {
		if ref.Kind == k {
			supported = true
		}
	}
	if !supported {
		allErrs = append(allErrs, field.NotSupported(refPath.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		allErrs = append(allErrs, field.Required(refPath.Child("name"), ""))
	} else {
		allErrs = append(allErrs, invalidEach(refPath.Child("name"), ref.Name, nameIsPathSegment(ref.Name, false))...)
	}
	return allErrs
}

// validateSubject checks one subject as upstream's
// ValidateRoleBindingSubject does: a service account is in the core group
// and named like one; users and groups are in RBAC's group.
func validateSubject(s *rbacv1.Subject, namespaced bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if s.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			allErrs = append(allErrs, invalidEach(fldPath.Child("name"), s.Name, nameIsDNSSubdomain(s.Name, false))...)
		}
		if s.APIGroup != "" {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return allErrs
}
