package auth

import (
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Authorizer decides requests against klab's policy ([ClusterRoles] bound
// by [ClusterRoleBindings]) the way upstream's RBAC authorizer does: a
// request is allowed when some rule of some role bound to the user, or to
// one of the user's groups, matches it; nothing ever denies explicitly.
type Authorizer struct {
	bindings []binding
}

// binding is a ClusterRoleBinding with its role's rules resolved.
type binding struct {
	crb   rbacv1.ClusterRoleBinding
	rules []rbacv1.PolicyRule
}

// NewAuthorizer returns an Authorizer for klab's policy.
func NewAuthorizer() *Authorizer {
	roles := make(map[string][]rbacv1.PolicyRule)
	for _, r := range ClusterRoles() {
		roles[r.Name] = r.Rules
	}
	a := &Authorizer{}
	for _, crb := range ClusterRoleBindings() {
		a.bindings = append(a.bindings, binding{crb: crb, rules: roles[crb.RoleRef.Name]})
	}
	return a
}

// Authorize decides attrs. When it allows, the reason names the binding
// that did, in RBAC's words:
//
//	RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters"
//
// When it denies the reason is empty, as RBAC's is, so the 403 message is
// exactly [ForbiddenMessage].
func (a *Authorizer) Authorize(attrs Attributes) (Decision, string) {
	for _, b := range a.bindings {
		subject, ok := appliesTo(attrs.User, b.crb.Subjects)
		if !ok {
			continue
		}
		for i := range b.rules {
			if ruleAllows(attrs, &b.rules[i]) {
				return DecisionAllow, "RBAC: allowed by " + describe(b.crb, subject)
			}
		}
	}
	return DecisionDeny, ""
}

// appliesTo returns the first subject that u is, or is a member of.
func appliesTo(u User, subjects []rbacv1.Subject) (rbacv1.Subject, bool) {
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			if s.Name == u.Name {
				return s, true
			}
		case rbacv1.GroupKind:
			if u.InGroup(s.Name) {
				return s, true
			}
		}
	}
	return rbacv1.Subject{}, false
}

// describe names a binding and subject as RBAC's reasons do.
func describe(crb rbacv1.ClusterRoleBinding, s rbacv1.Subject) string {
	return fmt.Sprintf("ClusterRoleBinding %q of %s %q to %s %q", crb.Name, crb.RoleRef.Kind, crb.RoleRef.Name, s.Kind, s.Name)
}

// ruleAllows reports whether rule matches the request, with RBAC's
// matching rules: "*" matches any verb, group or resource; "*/sub" matches
// that subresource of any resource; an empty resourceNames list matches
// any name; a non-resource URL ending in "*" matches by prefix.
func ruleAllows(attrs Attributes, rule *rbacv1.PolicyRule) bool {
	if !verbMatches(rule, attrs.Verb) {
		return false
	}
	if !attrs.ResourceRequest {
		return urlMatches(rule, attrs.Path)
	}
	resource := attrs.Resource
	if attrs.Subresource != "" {
		resource += "/" + attrs.Subresource
	}
	return groupMatches(rule, attrs.APIGroup) &&
		resourceMatches(rule, resource, attrs.Subresource) &&
		nameMatches(rule, attrs.Name)
}

func verbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	for _, v := range rule.Verbs {
		if v == rbacv1.VerbAll || v == verb {
			return true
		}
	}
	return false
}

func groupMatches(rule *rbacv1.PolicyRule, group string) bool {
	for _, g := range rule.APIGroups {
		if g == rbacv1.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

func resourceMatches(rule *rbacv1.PolicyRule, resource, subresource string) bool {
	for _, r := range rule.Resources {
		if r == rbacv1.ResourceAll || r == resource {
			return true
		}
		if subresource != "" && r == "*/"+subresource {
			return true
		}
	}
	return false
}

func nameMatches(rule *rbacv1.PolicyRule, name string) bool {
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

func urlMatches(rule *rbacv1.PolicyRule, path string) bool {
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
