package statefulset

import (
	"context"
	"fmt"
	"slices"
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
// server: a StatefulSet of 3 comes up as web-0, web-1, web-2, each only
// after the one before it is Ready (the test plays the kubelets), and
// scaled to 1 it goes down from web-2.
func TestAgainstAPIServer(t *testing.T) {
	testenv.EndToEnd(t)
	c := controllertest.StartCluster(t, Init)
	ns := controllertest.Namespace
	ctx := context.Background()
	labels := map[string]string{"app": "web"}
	controllertest.Create(t, c.Client.AppsV1().StatefulSets(ns).Create, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](3), ServiceName: "web",
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}}},
		},
	})
	live := func() []string {
		var names []string
		for _, p := range c.Pods(t) {
			if p.DeletionTimestamp == nil {
				names = append(names, p.Name)
			}
		}
		slices.Sort(names)
		return names
	}
	// Each ordinal appears alone, and the next only once it is Ready.
	for i, want := range [][]string{{"web-0"}, {"web-0", "web-1"}, {"web-0", "web-1", "web-2"}} {
		c.WaitFor(t, 20*time.Second, fmt.Sprintf("pods %v", want), func() (bool, string) {
			got := live()
			return slices.Equal(got, want), fmt.Sprintf("pods %v", got)
		})
		newest, err := c.Client.CoreV1().Pods(ns).Get(ctx, fmt.Sprintf("web-%d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if newest.Spec.Hostname != newest.Name || newest.Spec.Subdomain != "web" {
			t.Errorf("%s: hostname %q subdomain %q", newest.Name, newest.Spec.Hostname, newest.Spec.Subdomain)
		}
		c.MarkRunning(t, newest, true)
	}
	c.WaitFor(t, 20*time.Second, "status 3/3 ready", func() (bool, string) {
		set, err := c.Client.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var pods []string
		for _, p := range c.Pods(t) {
			pods = append(pods, fmt.Sprintf("%s %s %v", p.Name, p.Status.Phase, p.Status.Conditions))
		}
		return set.Status.ReadyReplicas == 3 && set.Status.ObservedGeneration == set.Generation, fmt.Sprintf("status %+v, pods %v", set.Status, pods)
	})

	// Scaled to one, web-2 goes before web-1.
	scale, err := c.Client.AppsV1().StatefulSets(ns).GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 1
	if _, err := c.Client.AppsV1().StatefulSets(ns).UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var seen [][]string
	c.WaitFor(t, 20*time.Second, "only web-0 left", func() (bool, string) {
		got := live()
		if len(seen) == 0 || !slices.Equal(seen[len(seen)-1], got) {
			seen = append(seen, got)
		}
		return slices.Equal(got, []string{"web-0"}), fmt.Sprintf("pods %v", got)
	})
	for _, s := range seen {
		if slices.Contains(s, "web-2") && !slices.Contains(s, "web-1") {
			t.Errorf("web-1 went before web-2: saw %v", seen)
		}
	}
}
