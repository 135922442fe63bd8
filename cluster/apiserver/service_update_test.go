package apiserver_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
)

// An update that leaves out a Service's ClusterIP and NodePort (kubectl
// replace of the original manifest) keeps the ones allocated at creation.
func TestServiceUpdateKeepsAllocations(t *testing.T) {
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	cs := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	manifest := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	created, err := cs.CoreV1().Services("default").Create(ctx, manifest.DeepCopy(), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	replacement := manifest.DeepCopy()
	replacement.Labels = map[string]string{"tier": "front"}
	updated, err := cs.CoreV1().Services("default").Update(ctx, replacement, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update without clusterIP and nodePort: %v", err)
	}
	if updated.Spec.ClusterIP != created.Spec.ClusterIP || updated.Spec.Ports[0].NodePort != created.Spec.Ports[0].NodePort {
		t.Errorf("update gave clusterIP %s nodePort %d; created with %s and %d",
			updated.Spec.ClusterIP, updated.Spec.Ports[0].NodePort, created.Spec.ClusterIP, created.Spec.Ports[0].NodePort)
	}
}
