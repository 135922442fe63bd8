package apiserver_test

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
)

// A restarted API server reconciles the default policy it finds as
// kube-apiserver's rbac/bootstrap-roles does: a deleted default comes back,
// one that lost its subjects gets them again, one marked autoupdate=false is
// left as it is, and one that is whole is not written at all.
func TestRestartReconcilesTheDefaultPolicyWritingOnlyWhatIsMissing(t *testing.T) {
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := testContext(t, testTimeout)
	rbac := adminClient(t, c).RbacV1()

	var deleted, optedOut string
	for _, r := range auth.ClusterRoles() {
		if r.AggregationRule != nil || len(r.Rules) == 0 || r.Name == auth.ClusterAdminRole {
			continue
		}
		switch {
		case deleted == "":
			deleted = r.Name
		case optedOut == "":
			optedOut = r.Name
		}
	}
	// A binding the admin's own rights do not come through: with the
	// cluster-admin binding's subjects gone the test could not go on.
	var binding string
	for _, b := range auth.ClusterRoleBindings() {
		if b.RoleRef.Name != auth.ClusterAdminRole && len(b.Subjects) > 0 {
			binding = b.Name
			break
		}
	}
	if err := rbac.ClusterRoles().Delete(ctx, deleted, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	crb, err := rbac.ClusterRoleBindings().Get(ctx, binding, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crb.Subjects = nil
	if _, err := rbac.ClusterRoleBindings().Update(ctx, crb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cr, err := rbac.ClusterRoles().Get(ctx, optedOut, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cr.Annotations = map[string]string{auth.AutoUpdateAnnotation: "false"}
	cr.Rules = []rbacv1.PolicyRule{}
	if _, err := rbac.ClusterRoles().Update(ctx, cr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	before, err := rbac.ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	c.Stop(0)
	c.Start(0)

	if _, err := rbac.ClusterRoles().Get(ctx, deleted, metav1.GetOptions{}); err != nil {
		t.Errorf("deleted default ClusterRole %s after a restart: %v", deleted, err)
	}
	crb, err = rbac.ClusterRoleBindings().Get(ctx, binding, metav1.GetOptions{})
	if err != nil || len(crb.Subjects) == 0 {
		t.Errorf("ClusterRoleBinding %s after a restart: subjects %v, %v; want the default's back", binding, crb.Subjects, err)
	}
	cr, err = rbac.ClusterRoles().Get(ctx, optedOut, metav1.GetOptions{})
	if err != nil || len(cr.Rules) != 0 {
		t.Errorf("ClusterRole %s marked autoupdate=false after a restart: rules %v, %v; want none", optedOut, cr.Rules, err)
	}
	after, err := rbac.ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv := map[string]string{}
	for _, r := range after.Items {
		rv[r.Name] = r.ResourceVersion
	}
	for _, r := range before.Items {
		if rv[r.Name] != r.ResourceVersion {
			t.Errorf("ClusterRole %s was written by the restart (resourceVersion %s → %s), though it lacked nothing", r.Name, r.ResourceVersion, rv[r.Name])
		}
	}
}
