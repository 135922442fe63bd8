package clusterroleaggregation

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

func role(name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Rules: rules}
}

func aggregated(name, label string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	r := role(name, nil, rules...)
	r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{label: "true"}}}}
	return r
}

var (
	readPods     = rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	readWidgets  = rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}
	toView       = map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}
	viewSelector = "rbac.authorization.k8s.io/aggregate-to-view"
)

// TestSyncClusterRole runs one sync of the role "view" and checks the
// rules it was left with and the requests sent.
func TestSyncClusterRole(t *testing.T) {
	cases := []struct {
		name        string
		roles       []*rbacv1.ClusterRole
		wantRules   []rbacv1.PolicyRule
		wantActions []string
	}{{
		name:        "gathers labelled roles in name order, each rule once",
		roles:       []*rbacv1.ClusterRole{aggregated("view", viewSelector), role("b-widgets", toView, readWidgets, readPods), role("a-pods", toView, readPods), role("other", nil, readWidgets)},
		wantRules:   []rbacv1.PolicyRule{readPods, readWidgets},
		wantActions: []string{"update clusterroles view"},
	}, {
		name:      "already whole: no write",
		roles:     []*rbacv1.ClusterRole{aggregated("view", viewSelector, readPods), role("a-pods", toView, readPods)},
		wantRules: []rbacv1.PolicyRule{readPods},
	}, {
		name:        "a role no longer labelled is dropped",
		roles:       []*rbacv1.ClusterRole{aggregated("view", viewSelector, readPods, readWidgets), role("a-pods", toView, readPods), role("b-widgets", nil, readWidgets)},
		wantRules:   []rbacv1.PolicyRule{readPods},
		wantActions: []string{"update clusterroles view"},
	}, {
		name:      "a role without an aggregation rule is left alone",
		roles:     []*rbacv1.ClusterRole{role("view", nil, readWidgets), role("a-pods", toView, readPods)},
		wantRules: []rbacv1.PolicyRule{readWidgets},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			for _, r := range tc.roles {
				objs = append(objs, r)
			}
			client := fake.NewClientset(objs...)
			factory := informers.NewSharedInformerFactory(client, 0)
			c, err := newController(client, factory.Rbac().V1().ClusterRoles(), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range tc.roles {
				factory.Rbac().V1().ClusterRoles().Informer().GetIndexer().Add(r)
			}
			client.ClearActions()
			if err := c.syncClusterRole(context.Background(), "view"); err != nil {
				t.Fatal(err)
			}
			var actions []string
			for _, a := range client.Actions() {
				actions = append(actions, a.GetVerb()+" "+a.GetResource().Resource+" view")
			}
			if diff := cmp.Diff(tc.wantActions, actions); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			got, err := client.RbacV1().ClusterRoles().Get(context.Background(), "view", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantRules, got.Rules); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
		})
	}
}
