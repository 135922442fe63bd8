package printers

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestControllerRevisionCells(t *testing.T) {
	owned := objectMeta("web-6bd6fd695c", 3*time.Minute)
	owned.OwnerReferences = []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "not-the-controller"},
		{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", Controller: ptr(true)},
	}
	tests := []struct {
		name string
		cr   *appsv1.ControllerRevision
		want []any
	}{
		{"owned by a StatefulSet", &appsv1.ControllerRevision{ObjectMeta: owned, Revision: 3},
			[]any{"web-6bd6fd695c", "statefulset.apps/web", int64(3), "3m"}},
		{"an orphan", &appsv1.ControllerRevision{ObjectMeta: objectMeta("agent-55d9c7", 2*time.Hour), Revision: 1},
			[]any{"agent-55d9c7", "<none>", int64(1), "120m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertCells(t, rowCells(t, tt.cr), tt.want)
		})
	}
}
