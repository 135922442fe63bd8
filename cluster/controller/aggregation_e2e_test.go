package controller

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestClusterRoleAggregation labels a new ClusterRole aggregate-to-view
// and watches its rule reach view within a second, and through view's own
// aggregate-to-edit label, edit and admin; the controller runs as
// system:kube-controller-manager, under its bootstrap role.
func TestClusterRoleAggregation(t *testing.T) {
	testenv.EndToEnd(t)
	c := apiservertest.New(t, apiservertest.Options{})
	client := c.Client()
	m := startManager(t, c, "master-1", 1, "clusterrole-aggregation")
	waitEvent(t, m, 10*time.Second, "leading", kind(EventStartedLeading))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	widgets := rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}
	has := func(r *rbacv1.ClusterRole) bool {
		return slices.ContainsFunc(r.Rules, func(have rbacv1.PolicyRule) bool { return reflect.DeepEqual(have, widgets) })
	}
	// Watch the three roles from now, so no update is missed.
	list, err := client.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list.Items {
		if (r.Name == auth.ViewRole || r.Name == auth.EditRole || r.Name == auth.AdminRole) && has(&r) {
			t.Fatalf("%s has the widgets rule before anyone added it", r.Name)
		}
	}
	w, err := client.RbacV1().ClusterRoles().Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	start := time.Now()
	_, err = client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "widget-viewer", Labels: map[string]string{auth.AggregateToView: "true"}},
		Rules:      []rbacv1.PolicyRule{widgets},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reached := map[string]time.Duration{}
	for len(reached) < 3 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch ended")
			}
			r, isRole := ev.Object.(*rbacv1.ClusterRole)
			if ev.Type != watch.Modified || !isRole || !has(r) {
				continue
			}
			if _, seen := reached[r.Name]; !seen && (r.Name == auth.ViewRole || r.Name == auth.EditRole || r.Name == auth.AdminRole) {
				reached[r.Name] = time.Since(start)
			}
		case <-ctx.Done():
			t.Fatalf("the widgets rule reached only %v", reached)
		}
	}
	t.Logf("rule aggregated into view after %v, edit %v, admin %v", reached[auth.ViewRole], reached[auth.EditRole], reached[auth.AdminRole])
	if reached[auth.ViewRole] > time.Second {
		t.Errorf("view got the rule after %v; want within a second", reached[auth.ViewRole])
	}

	// Taking the label off takes the rule out again.
	if err := client.RbacV1().ClusterRoles().Delete(ctx, "widget-viewer", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case ev := <-w.ResultChan():
			if r, ok := ev.Object.(*rbacv1.ClusterRole); ok && r.Name == auth.ViewRole && ev.Type == watch.Modified && !has(r) {
				return
			}
		case <-ctx.Done():
			t.Fatal("view kept the widgets rule after its role was deleted")
		}
	}
}
