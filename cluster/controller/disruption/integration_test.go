package disruption

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil/controllertest"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestAgainstAPIServer runs the controller against klab's real API
// server and its pods/eviction: a budget of minAvailable 1 over two Ready
// pods allows one disruption, the first eviction takes it, and the
// second is refused with 429 until the evicted pod's replacement counts.
func TestAgainstAPIServer(t *testing.T) {
	testenv.EndToEnd(t)
	c := controllertest.StartCluster(t, Init)
	ns := controllertest.Namespace
	ctx := context.Background()
	for _, name := range []string{"web-a", "web-b"} {
		p := controllertest.Create(t, c.Client.CoreV1().Pods(ns).Create, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: webLabels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}},
		})
		c.MarkRunning(t, p, true)
	}
	controllertest.Create(t, c.Client.PolicyV1().PodDisruptionBudgets(ns).Create, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ref(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: webLabels}},
	})
	status := func(want string) {
		c.WaitFor(t, 20*time.Second, want, func() (bool, string) {
			pdb, err := c.Client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			s := pdb.Status
			got := fmt.Sprintf("expected %d desired %d healthy %d allowed %d observed %d/%d",
				s.ExpectedPods, s.DesiredHealthy, s.CurrentHealthy, s.DisruptionsAllowed, s.ObservedGeneration, pdb.Generation)
			var pods []string
			for _, p := range c.Pods(t) {
				pods = append(pods, fmt.Sprintf("%s %s %v", p.Name, p.Status.Phase, p.DeletionTimestamp))
			}
			return got == want, got + fmt.Sprintf(" disrupted %v pods %v", s.DisruptedPods, pods)
		})
	}
	status("expected 2 desired 1 healthy 2 allowed 1 observed 1/1")

	evict := func(name string) error {
		return c.Client.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})
	}
	if err := evict("web-a"); err != nil {
		t.Fatalf("first eviction: %v", err)
	}
	status("expected 1 desired 1 healthy 1 allowed 0 observed 1/1")
	if err := evict("web-b"); !apierrors.IsTooManyRequests(err) {
		t.Errorf("second eviction: %v; want 429", err)
	}
	p := controllertest.Create(t, c.Client.CoreV1().Pods(ns).Create, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-c", Namespace: ns, Labels: webLabels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}},
	})
	c.MarkRunning(t, p, true)
	status("expected 2 desired 1 healthy 2 allowed 1 observed 1/1")
	if err := evict("web-b"); err != nil {
		t.Errorf("eviction once the replacement is ready: %v", err)
	}
}
