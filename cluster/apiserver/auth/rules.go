package auth

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// RuleAllows reports whether rule matches the request, with RBAC's
// matching rules (k8s.io/kubernetes pkg/apis/rbac/v1 helpers):
//
//   - "*" matches any verb, API group, resource or non-resource URL;
//   - a resource request names "<resource>/<subresource>", which a rule
//     matches by that exact name, by "*", or by "*/<subresource>";
//   - an empty resourceNames list matches any name, a list only the names
//     in it (so never a list or a create, which have no name);
//   - a non-resource URL ending in "*" matches by prefix.
func RuleAllows(attrs Attributes, rule *rbacv1.PolicyRule) bool {
	if !verbMatches(rule, attrs.Verb) {
		return false
	}
	if !attrs.ResourceRequest {
		return nonResourceURLMatches(rule, attrs.Path)
	}
	resource := attrs.Resource
	if attrs.Subresource != "" {
		resource += "/" + attrs.Subresource
	}
	return apiGroupMatches(rule, attrs.APIGroup) &&
		resourceMatches(rule, resource, attrs.Subresource) &&
		resourceNameMatches(rule, attrs.Name)
}

func verbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	for _, v := range rule.Verbs {
		if v == rbacv1.VerbAll || v == verb {
			return true
		}
	}
	return false
}

func apiGroupMatches(rule *rbacv1.PolicyRule, group string) bool {
	for _, g := range rule.APIGroups {
		if g == rbacv1.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

func resourceMatches(rule *rbacv1.PolicyRule, combined, subresource string) bool {
	for _, r := range rule.Resources {
		if r == rbacv1.ResourceAll || r == combined {
			return true
		}
		// "*/status" matches the status of any resource, and nothing but
		// a subresource.
		if subresource != "" && len(r) == len(subresource)+2 && strings.HasPrefix(r, "*/") && strings.HasSuffix(r, subresource) {
			return true
		}
	}
	return false
}

func resourceNameMatches(rule *rbacv1.PolicyRule, name string) bool {
	if len(rule.ResourceNames) == 0 {
		return true
	}
	for _, n := range rule.ResourceNames {
		if n == name {
			return true
		}
	}
	return false
}

func nonResourceURLMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		if u == rbacv1.NonResourceAll || u == path {
			return true
		}
		if prefix, ok := strings.CutSuffix(u, "*"); ok && strings.HasPrefix(path, prefix) {
			return true
		}
	}
	return false
}
