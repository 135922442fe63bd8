package replicaset

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil/controllertest"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestAgainstAPIServer runs the controller against klab's real API
// server: it adopts an orphan through a strategic merge patch, creates the
// rest, reports readiness the test writes in place of kubelets, and
// scales down.
func TestAgainstAPIServer(t *testing.T) {
	testenv.EndToEnd(t)
	c := controllertest.StartCluster(t, Init)
	ns := controllertest.Namespace
	ctx := context.Background()
	labels := map[string]string{"app": "web"}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "klab/app"}}}

	stray := controllertest.Create(t, c.Client.CoreV1().Pods(ns).Create, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "stray", Namespace: ns, Labels: labels}, Spec: spec,
	})
	rs := controllertest.Create(t, c.Client.AppsV1().ReplicaSets(ns).Create, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	})

	owned := func() []corev1.Pod {
		var out []corev1.Pod
		for _, p := range c.Pods(t) {
			if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == rs.UID && p.DeletionTimestamp == nil {
				out = append(out, p)
			}
		}
		return out
	}
	c.WaitFor(t, 20*time.Second, "three owned pods, the orphan adopted", func() (bool, string) {
		pods := owned()
		names := make([]string, len(pods))
		for i, p := range pods {
			names[i] = p.Name
		}
		return len(pods) == 3 && slices.Contains(names, stray.Name), fmt.Sprintf("owned pods %v", names)
	})

	for _, p := range owned() {
		c.MarkRunning(t, &p, true)
	}
	status := func() (appsv1.ReplicaSetStatus, int64) {
		got, err := c.Client.AppsV1().ReplicaSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Status, got.Generation
	}
	c.WaitFor(t, 20*time.Second, "status with three available replicas", func() (bool, string) {
		st, gen := status()
		return st.Replicas == 3 && st.ReadyReplicas == 3 && st.AvailableReplicas == 3 && st.ObservedGeneration == gen,
			fmt.Sprintf("status %+v, generation %d", st, gen)
	})

	// Scale down to one: two pods go, and the status follows.
	scale, err := c.Client.AppsV1().ReplicaSets(ns).GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 1
	if _, err := c.Client.AppsV1().ReplicaSets(ns).UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.WaitFor(t, 20*time.Second, "one replica left", func() (bool, string) {
		st, gen := status()
		return len(owned()) == 1 && st.Replicas == 1 && st.ObservedGeneration == gen,
			fmt.Sprintf("%d owned pods, status %+v, generation %d", len(owned()), st, gen)
	})
	c.WaitFor(t, 20*time.Second, "SuccessfulCreate and SuccessfulDelete events", func() (bool, string) {
		events := c.Events(t, "web")
		return slices.ContainsFunc(events, hasPrefix("SuccessfulCreate Created pod: web-")) &&
			slices.ContainsFunc(events, hasPrefix("SuccessfulDelete Deleted pod: ")), fmt.Sprintf("events %q", events)
	})
}

func hasPrefix(prefix string) func(string) bool {
	return func(s string) bool { return strings.HasPrefix(s, prefix) }
}
