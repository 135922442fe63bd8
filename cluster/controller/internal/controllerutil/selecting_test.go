package controllerutil

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSelecting(t *testing.T) {
	rs := func(name string, sel *metav1.LabelSelector) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.ReplicaSetSpec{Selector: sel}}
	}
	all := []*appsv1.ReplicaSet{
		rs("web", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}),
		rs("empty", &metav1.LabelSelector{}),
		rs("invalid", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}),
		rs("other", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}),
	}
	selectorOf := func(r *appsv1.ReplicaSet) *metav1.LabelSelector { return r.Spec.Selector }
	tests := []struct {
		name   string
		labels map[string]string
		want   []string
	}{
		{"matching labels", map[string]string{"app": "web", "tier": "front"}, []string{"web"}},
		{"no labels", nil, nil},
		{"nothing matches", map[string]string{"app": "cache"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, r := range Selecting(all, selectorOf, tt.labels) {
				got = append(got, r.Name)
			}
			if len(got) != len(tt.want) || len(got) > 0 && got[0] != tt.want[0] {
				t.Errorf("Selecting = %v, want %v", got, tt.want)
			}
		})
	}
}
