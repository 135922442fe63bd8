package apiserver_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
)

// TestNamespaceFinalize follows a namespace deletion as the namespace
// controller finishes it: Terminating until its spec finalizer is removed
// through namespaces/finalize, then gone.
func TestNamespaceFinalize(t *testing.T) {
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := context.Background()
	nsClient := c.Client().CoreV1().Namespaces()
	ns, err := nsClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ns.Spec.Finalizers; len(got) != 1 || got[0] != corev1.FinalizerKubernetes {
		t.Fatalf("new namespace finalizers = %v, want [kubernetes]", got)
	}
	if err := nsClient.Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err = nsClient.Get(ctx, "doomed", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("namespace gone before it was finalized: %v", err)
	}
	if ns.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("phase = %s, want Terminating", ns.Status.Phase)
	}

	// finalize changes the spec finalizers only.
	ns.Spec.Finalizers = nil
	ns.Labels = map[string]string{"ignored": "yes"}
	if _, err := nsClient.Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("finalize: %v", err)
	}
	if _, err := nsClient.Get(ctx, "doomed", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after finalize: %v, want NotFound", err)
	}

	// On a live namespace, finalize only edits the list.
	live, err := nsClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "alive"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live.Spec.Finalizers = nil
	live.Labels = map[string]string{"ignored": "yes"}
	got, err := nsClient.Finalize(ctx, live, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Finalizers) != 0 || got.Labels["ignored"] != "" {
		t.Fatalf("finalize result: finalizers %v labels %v; want no finalizers and labels untouched", got.Spec.Finalizers, got.Labels)
	}
}
