package apiserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/internal/testenv"
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

// TestProtectedNamespaces checks NamespaceLifecycle's refusal to delete
// default, kube-system and kube-public, through client-go and through the
// real kubectl, one namespace at a time and with --all.
func TestProtectedNamespaces(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := testContext(t, 2*testTimeout)
	cs := adminClient(t, c)
	for _, name := range []string{"default", "kube-system", "kube-public"} {
		err := cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
		wantStatus(t, err, http.StatusForbidden, metav1.StatusReasonForbidden,
			`namespaces "`+name+`" is forbidden: this namespace may not be deleted`)
	}
	k := newKubectl(t, c, auth.AdminUser)
	res := k.run(ctx, t, nil, "delete", "namespace", "kube-system")
	if want := `Error from server (Forbidden): namespaces "kube-system" is forbidden: this namespace may not be deleted`; res.code != 1 || strings.TrimSpace(res.stderr) != want {
		t.Errorf("kubectl delete namespace kube-system: exit %d stderr %q; want 1 and %q", res.code, res.stderr, want)
	}

	createNamespace(ctx, t, cs, "scratch")
	res = k.run(ctx, t, nil, "delete", "namespace", "--all", "--wait=false")
	if res.code != 1 {
		t.Errorf("kubectl delete namespace --all: exit %d; want 1 (three namespaces refused)", res.code)
	}
	for _, name := range []string{"default", "kube-system", "kube-public"} {
		want := `Error from server (Forbidden): namespaces "` + name + `" is forbidden: this namespace may not be deleted`
		if !strings.Contains(res.stderr, want) {
			t.Errorf("kubectl delete namespace --all stderr lacks %q:\n%s", want, res.stderr)
		}
	}
	wantMatch(t, "kubectl delete namespace --all", res.stdout, `(?m)^namespace "scratch" deleted$`, `(?m)^namespace "kube-node-lease" deleted$`)
	for _, name := range []string{"default", "kube-system", "kube-public"} {
		ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if err != nil || ns.DeletionTimestamp != nil || ns.Status.Phase != corev1.NamespaceActive {
			t.Errorf("namespace %s after delete --all: %v, %+v; want it Active and not being deleted", name, err, ns)
		}
	}
}
