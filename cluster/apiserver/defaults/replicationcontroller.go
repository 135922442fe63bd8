package defaults

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// defaultReplicationController sets core/v1's ReplicationController
// defaults: one replica and, because a ReplicationController's selector is
// a plain label map that most people leave out, the selector and the
// object's own labels copied from the template's labels when empty.
func defaultReplicationController(rc *corev1.ReplicationController) {
	if rc.Spec.Template != nil {
		if templateLabels := rc.Spec.Template.Labels; templateLabels != nil {
			if len(rc.Spec.Selector) == 0 {
				rc.Spec.Selector = maps.Clone(templateLabels)
			}
			if len(rc.Labels) == 0 {
				rc.Labels = maps.Clone(templateLabels)
			}
		}
		defaultPodSpec(&rc.Spec.Template.Spec)
	}
	if rc.Spec.Replicas == nil {
		rc.Spec.Replicas = ptr.To[int32](1)
	}
}

// defaultPodTemplate gives a PodTemplate's pod spec the defaults every pod
// spec gets.
func defaultPodTemplate(t *corev1.PodTemplate) {
	defaultPodSpec(&t.Template.Spec)
}
