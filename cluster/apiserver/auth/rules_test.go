package auth

import (
	"fmt"
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRuleAllows holds the matching rules the Kubernetes RBAC
// documentation and upstream's rbac_test.go spell out.
func TestRuleAllows(t *testing.T) {
	get := func(group, resource, subresource, name string) Attributes {
		return Attributes{Verb: "get", APIGroup: group, Resource: resource, Subresource: subresource, Name: name, Namespace: "ns", ResourceRequest: true}
	}
	withVerb := func(a Attributes, verb string) Attributes { a.Verb = verb; return a }
	url := func(verb, p string) Attributes { return Attributes{Verb: verb, Path: p} }
	resources := func(verbs, groups, resources, names []string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources, ResourceNames: names}
	}
	urls := func(verbs []string, u ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: verbs, NonResourceURLs: u}
	}
	s := func(v ...string) []string { return v }
	cases := []struct {
		name  string
		rule  rbacv1.PolicyRule
		attrs Attributes
		want  bool
	}{
		{"exact match", resources(s("get"), s(""), s("pods"), nil), get("", "pods", "", "web"), true},
		{"other verb", resources(s("get"), s(""), s("pods"), nil), withVerb(get("", "pods", "", "web"), "delete"), false},
		{"delete is not deletecollection", resources(s("delete"), s(""), s("pods"), nil), withVerb(get("", "pods", "", ""), "deletecollection"), false},
		{"verb wildcard", resources(s("*"), s(""), s("pods"), nil), withVerb(get("", "pods", "", "web"), "escalate"), true},
		{"other group", resources(s("get"), s(""), s("deployments"), nil), get("apps", "deployments", "", "web"), false},
		{"group wildcard", resources(s("get"), s("*"), s("deployments"), nil), get("apps", "deployments", "", "web"), true},
		{"core group is the empty string", resources(s("get"), s("core"), s("pods"), nil), get("", "pods", "", "web"), false},
		{"resource wildcard", resources(s("get"), s(""), s("*"), nil), get("", "secrets", "", "token"), true},
		{"resource wildcard covers subresources", resources(s("get"), s(""), s("*"), nil), get("", "pods", "log", "web"), true},
		{"a resource does not cover its subresources", resources(s("get"), s(""), s("pods"), nil), get("", "pods", "log", "web"), false},
		{"a subresource by its full name", resources(s("get"), s(""), s("pods/log"), nil), get("", "pods", "log", "web"), true},
		{"a subresource rule does not cover its resource", resources(s("get"), s(""), s("pods/log"), nil), get("", "pods", "", "web"), false},
		{"*/subresource covers that subresource of any resource", resources(s("update"), s("*"), s("*/scale"), nil), withVerb(get("apps", "deployments", "scale", "web"), "update"), true},
		{"*/subresource is not the resource", resources(s("update"), s("*"), s("*/scale"), nil), withVerb(get("apps", "deployments", "", "web"), "update"), false},
		{"*/subresource is not another subresource", resources(s("update"), s("*"), s("*/scale"), nil), withVerb(get("apps", "deployments", "status", "web"), "update"), false},
		{"resource/* is no wildcard", resources(s("get"), s(""), s("pods/*"), nil), get("", "pods", "log", "web"), false},
		{"resourceNames match the name", resources(s("get"), s(""), s("configmaps"), s("app-config")), get("", "configmaps", "", "app-config"), true},
		{"resourceNames refuse other names", resources(s("get"), s(""), s("configmaps"), s("app-config")), get("", "configmaps", "", "other"), false},
		{"resourceNames refuse a list, which has no name", resources(s("list"), s(""), s("configmaps"), s("app-config")), withVerb(get("", "configmaps", "", ""), "list"), false},
		{"resourceNames refuse a create, which has no name", resources(s("create"), s(""), s("configmaps"), s("app-config")), withVerb(get("", "configmaps", "", ""), "create"), false},
		{"resourceNames apply to subresources", resources(s("get"), s(""), s("pods/log"), s("web")), get("", "pods", "log", "web"), true},
		{"a resource rule never matches a URL", resources(s("*"), s("*"), s("*"), nil), url("get", "/healthz"), false},
		{"a URL rule never matches a resource", urls(s("*"), "*"), get("", "pods", "", "web"), false},
		{"URL exact", urls(s("get"), "/healthz"), url("get", "/healthz"), true},
		{"URL exact is exact", urls(s("get"), "/healthz"), url("get", "/healthz/etcd"), false},
		{"URL other verb", urls(s("get"), "/healthz"), url("post", "/healthz"), false},
		{"URL prefix", urls(s("get"), "/apis/*"), url("get", "/apis/apps/v1"), true},
		{"URL prefix includes the slash", urls(s("get"), "/apis/*"), url("get", "/apis/"), true},
		{"URL prefix is not the bare path", urls(s("get"), "/apis/*"), url("get", "/apis"), false},
		{"URL prefix without slash", urls(s("get"), "/healthz*"), url("get", "/healthzzz"), true},
		{"URL wildcard", urls(s("get"), "*"), url("get", "/anything/at/all"), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := RuleAllows(tc.attrs, &tc.rule); got != tc.want {
				t.Errorf("RuleAllows(%+v, %+v) = %v, want %v", tc.attrs, tc.rule, got, tc.want)
			}
		})
	}
}

// FuzzAuthorize throws arbitrary requests and rules at the authorizer. It
// must not panic; a request is allowed exactly when some rule of the
// policy matches it (RuleAllows, checked on its own), and never for a user
// with no binding.
func FuzzAuthorize(f *testing.F) {
	f.Add("jane", "ops", "get", "", "pods", "", "dev", "web", "/api", true, "get", "", "pods", "", "/api/*")
	f.Add("jane", "", "update", "apps", "deployments", "scale", "dev", "web", "", true, "*", "*", "*/scale", "", "")
	f.Add("bob", "x", "get", "", "configmaps", "", "", "a", "/healthz", false, "get", "", "configmaps", "a", "/healthz*")
	f.Fuzz(func(t *testing.T, user, group, verb, apiGroup, resource, subresource, namespace, name, path string, resourceRequest bool,
		ruleVerb, ruleGroup, ruleResource, ruleName, ruleURL string) {
		rule := rbacv1.PolicyRule{Verbs: []string{ruleVerb}}
		if ruleURL != "" {
			rule.NonResourceURLs = []string{ruleURL}
		} else {
			rule.APIGroups, rule.Resources = []string{ruleGroup}, []string{ruleResource}
			if ruleName != "" {
				rule.ResourceNames = []string{ruleName}
			}
		}
		a := NewAuthorizerFor(
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "fuzz"}, Rules: []rbacv1.PolicyRule{rule}},
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "fuzz", Namespace: "dev"}, Rules: []rbacv1.PolicyRule{rule}},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "fuzz"},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "fuzz"}, Subjects: []rbacv1.Subject{Group("ops")}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "fuzz", Namespace: "dev"},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "fuzz"}, Subjects: []rbacv1.Subject{UserSubject("jane")}},
		)
		attrs := Attributes{
			User: User{Name: user, Groups: []string{group}}, Verb: verb, APIGroup: apiGroup, Resource: resource,
			Subresource: subresource, Namespace: namespace, Name: name, Path: path, ResourceRequest: resourceRequest,
		}
		decision, reason := a.Authorize(attrs)
		bound := group == "ops" || (user == "jane" && namespace == "dev")
		want := bound && RuleAllows(attrs, &rule)
		if (decision == DecisionAllow) != want {
			t.Fatalf("Authorize(%+v) = %v (%s) with rule %+v; want allowed=%v", attrs, decision, reason, rule, want)
		}
		if decision != DecisionAllow && reason != "" {
			t.Fatalf("a denial with a reason %q, and no role is missing", reason)
		}
		_ = ForbiddenMessage(attrs)
		_ = a.Rules(attrs.User, namespace)
	})
}

// BenchmarkAuthorize measures one authorization decision with the default
// policy plus n RoleBindings in the request's namespace, each to its own
// user; the request is by the last-bound user, allowed by its binding,
// and, for the denial, by a user bound nowhere.
func BenchmarkAuthorize(b *testing.B) {
	for _, n := range []int{10, 1000} {
		objs := DefaultPolicy()
		objs = append(objs, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", Namespace: "dev"},
			Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}},
		})
		for i := range n {
			objs = append(objs, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("read-pods-%d", i), Namespace: "dev"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"},
				Subjects:   []rbacv1.Subject{UserSubject(fmt.Sprintf("user-%d", i)), Group(fmt.Sprintf("team-%d", i))},
			})
		}
		a := NewAuthorizerFor(objs...)
		allowed := sub(res(User{Name: fmt.Sprintf("user-%d", n-1), Groups: []string{AllAuthenticated}}, "get", "", "pods", "dev"), "", "web")
		denied := sub(res(User{Name: "nobody", Groups: []string{AllAuthenticated}}, "get", "", "pods", "dev"), "", "web")
		for _, bc := range []struct {
			name  string
			attrs Attributes
			want  Decision
		}{{"allow", allowed, DecisionAllow}, {"deny", denied, DecisionDeny}} {
			b.Run(fmt.Sprintf("rolebindings=%d/%s", n, bc.name), func(b *testing.B) {
				// Each decision is timed on its own as well, for the p99
				// the target is stated in.
				var took []time.Duration
				for b.Loop() {
					start := time.Now()
					d, _ := a.Authorize(bc.attrs)
					took = append(took, time.Since(start))
					if d != bc.want {
						b.Fatalf("decision %v, want %v", d, bc.want)
					}
				}
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds()), "p99-ns")
			})
		}
	}
}
