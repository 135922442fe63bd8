package apiserver_test

import (
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestLocalSubjectAccessReview asks the stored policy about jane within
// one namespace, as a namespace's admin may, and checks upstream's rules
// for the request's shape.
func TestLocalSubjectAccessReview(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := testContext(t, testTimeout)
	admin := adminClient(t, c)
	createNamespace(ctx, t, admin, "dev")
	bind := func(name, role, kind string, subject rbacv1.Subject) {
		t.Helper()
		_, err := admin.RbacV1().RoleBindings("dev").Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role},
			Subjects:   []rbacv1.Subject{subject},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	bind("jane-view", auth.ViewRole, "ClusterRole", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "jane"})
	bind("ann-admin", "admin", "ClusterRole", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "ann"})

	review := func(cs kubernetes.Interface, ns, verb string) (*authorizationv1.LocalSubjectAccessReview, error) {
		return cs.AuthorizationV1().LocalSubjectAccessReviews(ns).Create(ctx, &authorizationv1.LocalSubjectAccessReview{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns},
			Spec: authorizationv1.SubjectAccessReviewSpec{User: "jane",
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: "pods"}},
		}, metav1.CreateOptions{})
	}
	for verb, want := range map[string]bool{"list": true, "delete": false} {
		got, err := review(admin, "dev", verb)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Allowed != want {
			t.Errorf("may jane %s pods in dev: %v (%q); want %v", verb, got.Status.Allowed, got.Status.Reason, want)
		}
	}

	// ann administers dev, so she may ask there, and only there.
	cfg := c.Config(0, auth.AdminUser)
	cfg.Impersonate.UserName = "ann"
	ann, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := review(ann, "dev", "list"); err != nil || !got.Status.Allowed {
		t.Errorf("ann's review in dev: %+v, %v; want allowed", got, err)
	}
	_, err = review(ann, "default", "list")
	wantStatus(t, err, 403, metav1.StatusReasonForbidden,
		`localsubjectaccessreviews.authorization.k8s.io is forbidden: User "ann" cannot create resource "localsubjectaccessreviews" in API group "authorization.k8s.io" in the namespace "default"`)

	_, err = admin.AuthorizationV1().LocalSubjectAccessReviews("dev").Create(ctx, &authorizationv1.LocalSubjectAccessReview{
		ObjectMeta: metav1.ObjectMeta{Namespace: "dev"},
		Spec: authorizationv1.SubjectAccessReviewSpec{User: "jane",
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "get", Resource: "pods"}},
	}, metav1.CreateOptions{})
	wantStatus(t, err, 422, metav1.StatusReasonInvalid,
		`LocalSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes.namespace: Invalid value: "default": must match metadata.namespace`)
	_, err = admin.AuthorizationV1().LocalSubjectAccessReviews("dev").Create(ctx, &authorizationv1.LocalSubjectAccessReview{
		ObjectMeta: metav1.ObjectMeta{Namespace: "dev"},
		Spec: authorizationv1.SubjectAccessReviewSpec{User: "jane",
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"}},
	}, metav1.CreateOptions{})
	if err == nil {
		t.Error("a local review of a non-resource URL was answered")
	}
}
