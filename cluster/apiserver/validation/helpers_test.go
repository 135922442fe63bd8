package validation

import (
	"slices"
	"strings"
	"testing"

	"github.com/klab-dev/klab/cluster/apiserver/defaults"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The format messages, word for word as kube-apiserver sends them (note the
// two spaces before "or" in the label ones: upstream's).
const (
	dnsSubdomainMsg = `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`
	dnsLabelMsg     = `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`
	dns1035Msg      = `a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`
	labelValueMsg   = `a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`
	labelKeyNameMsg = `name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`
	configKeyMsg    = `a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`
)

// checkErrors compares the errors' texts (in any order: upstream walks maps,
// so its order is not fixed either) with want.
func checkErrors(t *testing.T, errs field.ErrorList, want ...string) {
	t.Helper()
	got := make([]string, len(errs))
	for i, e := range errs {
		got[i] = e.Error()
	}
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("errors differ\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
}

func objectMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: "1", UID: "0b7c4d1e-5a2f-4c3b-9e8d-1f2a3b4c5d6e"}
}

func container(name, image string) corev1.Container {
	return corev1.Container{Name: name, Image: image}
}

// validPod is what the API server holds after `kubectl run web
// --image=nginx`: defaulted, and valid.
func validPod(mutate ...func(*corev1.Pod)) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: objectMeta("web"),
		Spec:       corev1.PodSpec{Containers: []corev1.Container{container("web", "nginx")}},
	}
	for _, m := range mutate {
		m(pod)
	}
	defaults.Default(pod)
	return pod
}

func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{container("web", "nginx:1.27")}},
	}
}

var webLabels = map[string]string{"app": "web"}

func validDeployment(mutate ...func(*appsv1.Deployment)) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: objectMeta("web"),
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: webLabels},
			Template: podTemplate(webLabels),
		},
	}
	for _, m := range mutate {
		m(d)
	}
	defaults.Default(d)
	return d
}

func validJob(mutate ...func(*batchv1.Job)) *batchv1.Job {
	job := &batchv1.Job{ObjectMeta: objectMeta("pi"), Spec: batchv1.JobSpec{Template: podTemplate(nil)}}
	job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	for _, m := range mutate {
		m(job)
	}
	defaults.Default(job)
	return job
}

func validService(mutate ...func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: objectMeta("web"),
		Spec: corev1.ServiceSpec{
			Selector:  webLabels,
			Ports:     []corev1.ServicePort{{Port: 80}},
			ClusterIP: "10.96.0.10",
		},
	}
	for _, m := range mutate {
		m(svc)
	}
	defaults.Default(svc)
	return svc
}
