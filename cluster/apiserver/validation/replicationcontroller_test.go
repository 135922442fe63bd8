package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/apiserver/defaults"
)

func TestReplicationController(t *testing.T) {
	tpl := podTemplate(map[string]string{"app": "web"})
	rc := &corev1.ReplicationController{ObjectMeta: objectMeta("web-1"), Spec: corev1.ReplicationControllerSpec{Template: &tpl}}
	defaults.Default(rc)
	// The defaults fill the selector in from the template's labels.
	checkErrors(t, ValidateCreate(rc))

	bad := rc.DeepCopy()
	bad.Spec.Selector = map[string]string{"app": "api"}
	bad.Spec.Replicas = ptr.To[int32](-1)
	bad.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	checkErrors(t, ValidateCreate(bad),
		`spec.replicas: Invalid value: -1: must be greater than or equal to 0`,
		"spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`",
		`spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"`,
	)

	noTemplate := &corev1.ReplicationController{ObjectMeta: objectMeta("web-2")}
	defaults.Default(noTemplate)
	checkErrors(t, ValidateCreate(noTemplate), `spec.selector: Required value`, `spec.template: Required value`)

	// Unlike apps/v1's, a ReplicationController's selector may change.
	changed := rc.DeepCopy()
	changed.Spec.Selector = map[string]string{"app": "web", "v": "2"}
	changed.Spec.Template.Labels = map[string]string{"app": "web", "v": "2"}
	checkErrors(t, ValidateUpdate(changed, rc))

	status := rc.DeepCopy()
	status.Status = corev1.ReplicationControllerStatus{Replicas: 1, ReadyReplicas: 2}
	checkErrors(t, ValidateStatusUpdate(status, rc), `status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas`)
}

func TestPodTemplate(t *testing.T) {
	good := &corev1.PodTemplate{ObjectMeta: objectMeta("tpl"), Template: podTemplate(map[string]string{"app": "web"})}
	defaults.Default(good)
	checkErrors(t, ValidateCreate(good))

	empty := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name", Namespace: "default"}}
	defaults.Default(empty)
	checkErrors(t, ValidateCreate(empty),
		`metadata.name: Invalid value: "Bad_Name": `+dnsSubdomainMsg,
		`template.spec.containers: Required value`,
	)
}
