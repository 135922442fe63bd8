package controllerutil

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestDeletedObject(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	tests := []struct {
		name   string
		obj    any
		wantOK bool
	}{
		{"the object", pod, true},
		{"a tombstone of it", cache.DeletedFinalStateUnknown{Key: "default/web", Obj: pod}, true},
		{"another type", &corev1.Node{}, false},
		{"a tombstone of another type", cache.DeletedFinalStateUnknown{Key: "n", Obj: &corev1.Node{}}, false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := DeletedObject[*corev1.Pod](tt.obj)
			if ok != tt.wantOK || ok && got != pod {
				t.Errorf("DeletedObject = %v, %v; want ok %v", got, ok, tt.wantOK)
			}
		})
	}
}
