package apiserver

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/yaml"

	"github.com/klab-dev/klab/cluster/apiserver/defaults"
	"github.com/klab-dev/klab/cluster/apiserver/registry"
)

// The CPU cost of field management on one write, without the network and
// etcd around it (bench/apiserver measures whole requests): what a create
// of a Deployment adds, and what a server-side apply of one costs.

func benchDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27",
					Ports: []corev1.ContainerPort{{ContainerPort: 80}}}}},
			},
		},
	}
	defaults.Default(d)
	return d
}

func deploymentsFieldManager(b *testing.B) *managedfields.FieldManager {
	b.Helper()
	res, _ := registry.New().Lookup(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"})
	fm, err := (&fieldManagers{}).get(res, "")
	if err != nil {
		b.Fatal(err)
	}
	return fm
}

// BenchmarkManagedFieldsCreate is the managedFields a Deployment create
// records.
func BenchmarkManagedFieldsCreate(b *testing.B) {
	fm := deploymentsFieldManager(b)
	d := benchDeployment()
	b.ReportAllocs()
	for b.Loop() {
		fm.UpdateNoErrors(&appsv1.Deployment{}, d.DeepCopy(), "kubectl-create")
	}
}

// BenchmarkManagedFieldsApply is the merge of a server-side apply that
// changes a Deployment's replicas.
func BenchmarkManagedFieldsApply(b *testing.B) {
	fm := deploymentsFieldManager(b)
	config := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.27", ports: [{containerPort: 80}]}]
`), &config.Object); err != nil {
		b.Fatal(err)
	}
	live, err := fm.Apply(&appsv1.Deployment{}, config.DeepCopy(), "bench", false)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fm.Apply(live, config.DeepCopy(), "bench", false); err != nil {
			b.Fatal(err)
		}
	}
}
