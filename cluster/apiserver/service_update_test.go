package apiserver_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/internal/testenv"
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

// `kubectl patch svc x -p '{"spec":{"type":"ClusterIP"}}'` turns a NodePort
// Service into a ClusterIP one: the nodePort it no longer uses is dropped
// (and with it externalTrafficPolicy), as upstream's strategy does, and
// goes back to the allocator, so another Service may take it at once.
func TestServiceNodePortToClusterIP(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	cs := c.Client()
	ctx := testContext(t, testTimeout)
	k := newKubectl(t, c, auth.AdminUser)
	wantLines(t, "kubectl create service nodeport", k.ok(ctx, t, "create", "service", "nodeport", "web", "--tcp=80:8080"), "service/web created")
	created, err := cs.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodePort := created.Spec.Ports[0].NodePort
	if nodePort == 0 || created.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster {
		t.Fatalf("created without a nodePort or externalTrafficPolicy: %+v", created.Spec)
	}

	wantLines(t, "kubectl patch", k.ok(ctx, t, "patch", "svc", "web", "-p", `{"spec":{"type":"ClusterIP"}}`), "service/web patched")
	patched, err := cs.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if patched.Spec.Type != corev1.ServiceTypeClusterIP || patched.Spec.Ports[0].NodePort != 0 || patched.Spec.ExternalTrafficPolicy != "" ||
		patched.Spec.ClusterIP != created.Spec.ClusterIP {
		t.Errorf("after the patch: type %s nodePort %d externalTrafficPolicy %q clusterIP %s; want ClusterIP, 0, empty and %s",
			patched.Spec.Type, patched.Spec.Ports[0].NodePort, patched.Spec.ExternalTrafficPolicy, patched.Spec.ClusterIP, created.Spec.ClusterIP)
	}

	// The port is free: another Service asks for exactly it.
	other := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "other"},
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, NodePort: nodePort}}},
	}
	if _, err := cs.CoreV1().Services("default").Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Errorf("reuse of nodePort %d after the patch: %v", nodePort, err)
	}

	// Back to NodePort: a new port is allocated, not the one now taken.
	k.ok(ctx, t, "patch", "svc", "web", "-p", `{"spec":{"type":"NodePort"}}`)
	back, err := cs.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if np := back.Spec.Ports[0].NodePort; np == 0 || np == nodePort {
		t.Errorf("back to NodePort: nodePort %d; want a new one, not %d", np, nodePort)
	}
}
