package validation

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestValidateRBAC(t *testing.T) {
	ref := func(kind, name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}
	}
	user := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "jane"}
	readPods := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	ns := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: "dev"} }
	cluster := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }
	tests := []struct {
		name string
		obj  runtime.Object
		want []string
	}{
		{name: "role", obj: &rbacv1.Role{ObjectMeta: ns("pod-reader"), Rules: []rbacv1.PolicyRule{readPods}}},
		{name: "a colon in a name is fine", obj: &rbacv1.ClusterRole{ObjectMeta: cluster("system:reader"), Rules: []rbacv1.PolicyRule{readPods}}},
		{name: "a slash is not", obj: &rbacv1.ClusterRole{ObjectMeta: cluster("a/b")},
			want: []string{`metadata.name: Invalid value: "a/b": may not contain '/'`}},
		{name: "rule without verbs", obj: &rbacv1.Role{ObjectMeta: ns("r"), Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}}},
			want: []string{`rules[0].verbs: Required value: verbs must contain at least one value`}},
		{name: "resource rule without group and resource", obj: &rbacv1.Role{ObjectMeta: ns("r"), Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}}}},
			want: []string{`rules[0].apiGroups: Required value: resource rules must supply at least one api group`, `rules[0].resources: Required value: resource rules must supply at least one resource`}},
		{name: "URL in a Role", obj: &rbacv1.Role{ObjectMeta: ns("r"), Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}}},
			want: []string{`rules[0].nonResourceURLs: Invalid value: ["/healthz"]: namespaced rules cannot apply to non-resource URLs`}},
		{name: "URL and resource in one rule", obj: &rbacv1.ClusterRole{ObjectMeta: cluster("r"), Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}, Resources: []string{"pods"}}}},
			want: []string{`rules[0].nonResourceURLs: Invalid value: ["/healthz"]: rules cannot apply to both regular resources and non-resource URLs`}},
		{name: "empty aggregation rule", obj: &rbacv1.ClusterRole{ObjectMeta: cluster("r"), AggregationRule: &rbacv1.AggregationRule{}},
			want: []string{`aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil`}},
		{name: "rolebinding", obj: &rbacv1.RoleBinding{ObjectMeta: ns("b"), RoleRef: ref("Role", "pod-reader"), Subjects: []rbacv1.Subject{user}}},
		{name: "rolebinding to a deployment", obj: &rbacv1.RoleBinding{ObjectMeta: ns("b"), RoleRef: ref("Deployment", "web")},
			want: []string{`roleRef.kind: Unsupported value: "Deployment": supported values: "Role", "ClusterRole"`}},
		{name: "clusterrolebinding to a role", obj: &rbacv1.ClusterRoleBinding{ObjectMeta: cluster("b"), RoleRef: ref("Role", "pod-reader")},
			want: []string{`roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"`}},
		{name: "service account without namespace in a clusterrolebinding", obj: &rbacv1.ClusterRoleBinding{ObjectMeta: cluster("b"), RoleRef: ref("ClusterRole", "view"),
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "builder"}}},
			want: []string{`subjects[0].namespace: Required value`}},
		{name: "user in the wrong group", obj: &rbacv1.RoleBinding{ObjectMeta: ns("b"), RoleRef: ref("Role", "r"),
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "jane"}}},
			want: []string{`subjects[0].apiGroup: Unsupported value: "": supported values: "rbac.authorization.k8s.io"`}},
		{name: "unknown subject kind", obj: &rbacv1.RoleBinding{ObjectMeta: ns("b"), RoleRef: ref("Role", "r"),
			Subjects: []rbacv1.Subject{{Kind: "Robot", Name: "r2"}}},
			want: []string{`subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrors(t, ValidateCreate(tt.obj), tt.want...)
		})
	}
}
