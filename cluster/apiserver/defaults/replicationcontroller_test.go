package defaults

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Upstream's SetDefaults_ReplicationController: one replica, and the
// selector and the object's labels taken from the template's labels only
// when they are empty.
func TestReplicationControllerDefaults(t *testing.T) {
	templateLabels := map[string]string{"app": "web"}
	tests := []struct {
		name                     string
		rc                       corev1.ReplicationController
		wantSelector, wantLabels map[string]string
		wantReplicas             int32
	}{
		{
			name:         "everything from the template",
			rc:           corev1.ReplicationController{Spec: corev1.ReplicationControllerSpec{Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: templateLabels}}}},
			wantSelector: templateLabels, wantLabels: templateLabels, wantReplicas: 1,
		},
		{
			name: "own selector and labels kept",
			rc: corev1.ReplicationController{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "a"}},
				Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](0), Selector: map[string]string{"app": "web"},
					Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "v": "1"}}}},
			},
			wantSelector: map[string]string{"app": "web"}, wantLabels: map[string]string{"team": "a"}, wantReplicas: 0,
		},
		{
			name:         "no template: nothing to copy",
			rc:           corev1.ReplicationController{},
			wantReplicas: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := tc.rc.DeepCopy()
			Default(rc)
			if diff := cmp.Diff(tc.wantSelector, rc.Spec.Selector); diff != "" {
				t.Errorf("selector (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantLabels, rc.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if got := ptr.Deref(rc.Spec.Replicas, -1); got != tc.wantReplicas {
				t.Errorf("replicas %d, want %d", got, tc.wantReplicas)
			}
			if rc.Spec.Template != nil && rc.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
				t.Errorf("template pod spec not defaulted: restartPolicy %q", rc.Spec.Template.Spec.RestartPolicy)
			}
		})
	}
}
