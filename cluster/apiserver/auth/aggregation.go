package auth

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// AggregatedRules returns the rules an aggregated ClusterRole should have:
// those of every other ClusterRole matched by one of its selectors, in
// role name order, each rule once, as upstream's clusterrole aggregation
// controller gathers them. A role without an aggregation rule keeps its
// own rules.
func AggregatedRules(role *rbacv1.ClusterRole, all []*rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	if role.AggregationRule == nil {
		return role.Rules, nil
	}
	var selectors []labels.Selector
	for i := range role.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, fmt.Errorf("clusterrole %s: aggregation rule selector %d: %w", role.Name, i, err)
		}
		selectors = append(selectors, sel)
	}
	sorted := slices.Clone(all)
	slices.SortFunc(sorted, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
	rules := []rbacv1.PolicyRule{}
	for _, other := range sorted {
		if other.Name == role.Name {
			continue
		}
		matched := slices.ContainsFunc(selectors, func(s labels.Selector) bool { return s.Matches(labels.Set(other.Labels)) })
		if !matched {
			continue
		}
		for _, r := range other.Rules {
			if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return reflect.DeepEqual(have, r) }) {
				rules = append(rules, r)
			}
		}
	}
	return rules, nil
}

// DefaultPolicy returns every default role and binding, aggregated roles
// with their rules gathered, as pointers: what a new cluster starts with.
func DefaultPolicy() []any {
	var objs []any
	roles := ClusterRoles()
	ptrs := make([]*rbacv1.ClusterRole, len(roles))
	for i := range roles {
		ptrs[i] = &roles[i]
	}
	// Aggregation is two levels deep (view into edit into admin), so
	// gather the inner roles first: view, then edit, then admin.
	for _, name := range []string{ViewRole, EditRole, AdminRole} {
		for _, r := range ptrs {
			if r.Name == name {
				r.Rules, _ = AggregatedRules(r, ptrs) // the default selectors are valid
			}
		}
	}
	for _, r := range ptrs {
		objs = append(objs, r)
	}
	for _, b := range ClusterRoleBindings() {
		objs = append(objs, &b)
	}
	for _, r := range Roles() {
		objs = append(objs, &r)
	}
	for _, b := range RoleBindings() {
		objs = append(objs, &b)
	}
	return objs
}
