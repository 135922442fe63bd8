package apiserver_test

// Shared fixtures of the acceptance tests: a cluster per test (real etcd
// members, HTTPS, bearer tokens), clients for a chosen server and user, and
// waits that end on an event or a deadline, never after a fixed sleep.

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
)

// testTimeout bounds each acceptance test: long enough for a slow shared
// machine, short enough that a hang is reported as a failure.
const testTimeout = 90 * time.Second

// testContext returns a context that ends with the test or after d.
func testContext(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// clientFor returns a clientset talking to server i as user.
func clientFor(t testing.TB, c *apiservertest.Cluster, i int, user string) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config(i, user))
	if err != nil {
		t.Fatalf("clientset for server %d as %s: %v", i, user, err)
	}
	return cs
}

// adminClient returns an admin clientset for server 0.
func adminClient(t testing.TB, c *apiservertest.Cluster) kubernetes.Interface {
	t.Helper()
	return clientFor(t, c, 0, auth.AdminUser)
}

// createNamespace makes a namespace with the "default" ServiceAccount pods
// need (the service account controller's job upstream; no controller runs
// in these tests).
func createNamespace(ctx context.Context, t testing.TB, cs kubernetes.Interface, name string) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}}
	if _, err := cs.CoreV1().ServiceAccounts(name).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create service account %s/default: %v", name, err)
	}
}

// configMap returns a ConfigMap with the given data.
func configMap(namespace, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Data: data}
}

// podSpec is a minimal valid pod spec.
func podSpec(nodeName string) corev1.PodSpec {
	return corev1.PodSpec{
		NodeName:      nodeName,
		RestartPolicy: corev1.RestartPolicyAlways,
		Containers:    []corev1.Container{{Name: "app", Image: "nginx:1.27"}},
	}
}

// pod returns a minimal valid pod, scheduled to nodeName if it is not "".
func pod(namespace, name, nodeName string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: podSpec(nodeName)}
}

// statusOf returns the Status an API error carries; the test fails if err
// is not an API error.
func statusOf(t testing.TB, err error) metav1.Status {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("error %v (%T) is not an API status error", err, err)
	}
	return status.Status()
}

// wantStatus checks an API error's HTTP code, reason and message.
// An empty message is not checked.
func wantStatus(t testing.TB, err error, code int32, reason metav1.StatusReason, message string) {
	t.Helper()
	if err == nil {
		t.Fatalf("request succeeded; want %d %s", code, reason)
	}
	st := statusOf(t, err)
	if st.Code != code || st.Reason != reason {
		t.Errorf("status = %d %s (%q); want %d %s", st.Code, st.Reason, st.Message, code, reason)
	}
	if message != "" && st.Message != message {
		t.Errorf("message = %q\nwant      %q", st.Message, message)
	}
}

// names returns the sorted names of objects.
func names[T metav1.Object](items []T) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it.GetName())
	}
	sort.Strings(out)
	return out
}

// ptrs returns pointers to the elements of a list's Items.
func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// equalStrings compares two string slices.
func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// notifier wakes waiters whenever something they watch changes.
type notifier struct{ ch chan struct{} }

func newNotifier() *notifier { return &notifier{ch: make(chan struct{}, 1)} }

// poke wakes a waiter (at most one wake-up is kept pending).
func (n *notifier) poke() {
	select {
	case n.ch <- struct{}{}:
	default:
	}
}

// waitUntil re-checks cond each time n is poked until it holds or ctx
// ends; describe explains the state on failure.
func (n *notifier) waitUntil(ctx context.Context, t testing.TB, what string, cond func() bool, describe func() string) {
	t.Helper()
	for !cond() {
		select {
		case <-n.ch:
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s: %s", what, describe())
		}
	}
}

// isSuccess reports whether a HTTP code is 2xx.
func isSuccess(code int) bool { return code >= http.StatusOK && code < 300 }
