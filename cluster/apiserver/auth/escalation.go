package auth

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"
)

// FullAuthority is what cluster-admin holds: every verb on everything.
// Setting an aggregation rule, which can gather any rule, needs it.
var FullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{rbacv1.VerbAll}, APIGroups: []string{rbacv1.APIGroupAll}, Resources: []string{rbacv1.ResourceAll}},
	{Verbs: []string{rbacv1.VerbAll}, NonResourceURLs: []string{rbacv1.NonResourceAll}},
}

// ConfirmNoEscalation returns an error unless u, in namespace ("" for
// cluster-wide), already holds every permission rules grant: RBAC's
// escalation check, which keeps a user who may write roles or bindings
// from granting more than they have. The error is upstream's:
//
//	user "jane" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
//	{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}
func (a *Authorizer) ConfirmNoEscalation(u User, namespace string, rules []rbacv1.PolicyRule) error {
	owner := a.RulesFor(u, namespace)
	covered, missing := rbacvalidation.Covers(owner, rules)
	if covered {
		return nil
	}
	var lines []string
	for _, r := range compactRules(missing) {
		if s := compactString(r); !slices.Contains(lines, s) {
			lines = append(lines, s)
		}
	}
	slices.Sort(lines)
	groups := u.Groups
	if groups == nil {
		groups = []string{}
	}
	return errors.New(fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s", u.Name, groups, strings.Join(lines, "\n")))
}

// compactRules merges the rules that name one API group, one resource and
// at most one object name, and differ only in their verbs, as upstream
// does before listing what is missing.
func compactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	type simple struct{ group, resource, name string }
	var out []rbacv1.PolicyRule
	merged := map[simple]int{} // index in out
	for _, r := range rules {
		isSimple := len(r.APIGroups) == 1 && len(r.Resources) == 1 && len(r.ResourceNames) <= 1 && len(r.NonResourceURLs) == 0
		if !isSimple {
			out = append(out, r)
			continue
		}
		key := simple{group: r.APIGroups[0], resource: r.Resources[0]}
		if len(r.ResourceNames) == 1 {
			key.name = "=" + r.ResourceNames[0]
		}
		i, ok := merged[key]
		if !ok {
			merged[key] = len(out)
			out = append(out, *r.DeepCopy())
			continue
		}
		for _, verb := range r.Verbs {
			if !slices.Contains(out[i].Verbs, verb) {
				out[i].Verbs = append(out[i].Verbs, verb)
			}
		}
	}
	return out
}

// compactString writes a rule as upstream's escalation message does:
// {APIGroups:[""], Resources:["pods"], Verbs:["delete"]}.
func compactString(r rbacv1.PolicyRule) string {
	var parts []string
	add := func(name string, values []string) {
		if len(values) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", name, values))
		}
	}
	add("APIGroups", r.APIGroups)
	add("Resources", r.Resources)
	add("NonResourceURLs", r.NonResourceURLs)
	add("ResourceNames", r.ResourceNames)
	add("Verbs", r.Verbs)
	return "{" + strings.Join(parts, ", ") + "}"
}
