package auth

import (
	"reflect"
	"slices"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
)

func TestReview(t *testing.T) {
	tests := []struct {
		name string
		user User
		spec authorizationv1.SelfSubjectAccessReviewSpec
		want authorizationv1.SubjectAccessReviewStatus
	}{
		{
			name: "viewer can-i create pods",
			user: viewer,
			spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: "default", Verb: "create", Resource: "pods",
			}},
			want: authorizationv1.SubjectAccessReviewStatus{},
		},
		{
			name: "viewer can-i get pods",
			user: viewer,
			spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: "default", Verb: "get", Resource: "pods", Name: "web-1",
			}},
			want: authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: byViewers},
		},
		{
			name: "viewer can-i get pods/log",
			user: viewer,
			spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: "default", Verb: "get", Resource: "pods", Subresource: "log",
			}},
			want: authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: byViewers},
		},
		{
			name: "viewer can-i '*' '*'",
			user: viewer,
			spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: "*", Group: "*", Resource: "*",
			}},
			want: authorizationv1.SubjectAccessReviewStatus{},
		},
		{
			name: "admin can-i '*' '*'",
			user: admin,
			spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: "*", Group: "*", Resource: "*",
			}},
			want: authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: byClusterAdmin},
		},
		{
			name: "user can-i get /apis",
			user: alice,
			spec: authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{
				Path: "/apis", Verb: "get",
			}},
			want: authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: byDiscovery},
		},
		{
			name: "no attributes",
			user: admin,
			want: authorizationv1.SubjectAccessReviewStatus{EvaluationError: "exactly one of nonResourceAttributes or resourceAttributes must be specified"},
		},
		{
			name: "both attributes",
			user: admin,
			spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes:    &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods"},
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/api", Verb: "get"},
			},
			want: authorizationv1.SubjectAccessReviewStatus{EvaluationError: "exactly one of nonResourceAttributes or resourceAttributes must be specified"},
		},
	}
	a := testPolicy()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := a.Review(tt.user, tt.spec); got != tt.want {
				t.Errorf("Review:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestRules(t *testing.T) {
	discoveryURLs := []string{"/livez", "/readyz", "/healthz", "/version", "/version/",
		"/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*"}
	basicUser := []authorizationv1.ResourceRule{
		{Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews"}},
		{Verbs: []string{"create"}, APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"selfsubjectreviews"}},
	}
	publicInfo := authorizationv1.NonResourceRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/livez", "/readyz", "/healthz", "/version", "/version/"}}
	tests := []struct {
		name string
		user User
		want authorizationv1.SubjectRulesReviewStatus
	}{
		{
			name: "authenticated user",
			user: alice,
			want: authorizationv1.SubjectRulesReviewStatus{
				ResourceRules: basicUser,
				NonResourceRules: []authorizationv1.NonResourceRule{
					{Verbs: []string{"get"}, NonResourceURLs: discoveryURLs},
					publicInfo,
				},
			},
		},
		{
			name: "jane in dev",
			user: jane,
			want: authorizationv1.SubjectRulesReviewStatus{
				ResourceRules: append(slices.Clone(basicUser), authorizationv1.ResourceRule{
					Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"},
				}),
				NonResourceRules: []authorizationv1.NonResourceRule{
					{Verbs: []string{"get"}, NonResourceURLs: discoveryURLs},
					publicInfo,
				},
			},
		},
		{
			name: "anonymous",
			user: Anonymous,
			want: authorizationv1.SubjectRulesReviewStatus{
				ResourceRules:    []authorizationv1.ResourceRule{},
				NonResourceRules: []authorizationv1.NonResourceRule{publicInfo},
			},
		},
		{
			name: "admin",
			user: admin,
			want: authorizationv1.SubjectRulesReviewStatus{
				ResourceRules: append([]authorizationv1.ResourceRule{
					{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
				}, basicUser...),
				NonResourceRules: []authorizationv1.NonResourceRule{
					{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
					{Verbs: []string{"get"}, NonResourceURLs: discoveryURLs},
					publicInfo,
				},
			},
		},
	}
	a := testPolicy()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := a.Rules(tt.user, "dev"); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Rules:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestViewerRulesLeaveOutSecrets checks the rules kubectl auth can-i --list
// shows the viewer: read-only, and no rule that reaches core secrets.
func TestViewerRulesLeaveOutSecrets(t *testing.T) {
	status := testPolicy().Rules(viewer, "default")
	if len(status.ResourceRules) == 0 {
		t.Fatal("viewer has no resource rules")
	}
	for _, r := range status.ResourceRules {
		selfReview := slices.Equal(r.Verbs, []string{"create"}) &&
			(slices.Equal(r.APIGroups, []string{"authorization.k8s.io"}) || slices.Equal(r.APIGroups, []string{"authentication.k8s.io"}))
		if !selfReview && !slices.Equal(r.Verbs, []string{"get", "list", "watch"}) {
			t.Errorf("viewer rule %+v grants more than get, list, watch", r)
		}
		coreGroup := slices.Contains(r.APIGroups, "") || slices.Contains(r.APIGroups, "*")
		if coreGroup && (slices.Contains(r.Resources, "secrets") || slices.Contains(r.Resources, "*")) {
			t.Errorf("viewer rule %+v reaches secrets", r)
		}
	}
}
