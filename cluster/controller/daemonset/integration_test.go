package daemonset

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"k8s.io/kubectl/pkg/polymorphichelpers"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil/controllertest"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestRolloutAgainstAPIServer runs the controller against klab's real API
// server with two nodes, one tainted. The test plays the scheduler
// (binding each pod to the node its affinity names) and the kubelets
// (readiness, finishing deletions). The DaemonSet must run one pod on the
// untainted node only, and roll a new image out until `kubectl rollout
// status` (kubectl's own StatusViewer) says it is done.
func TestRolloutAgainstAPIServer(t *testing.T) {
	testenv.EndToEnd(t)
	c := controllertest.StartCluster(t, Init)
	ns := controllertest.Namespace
	ctx := context.Background()
	for _, node := range []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}}},
	} {
		controllertest.Create(t, c.Client.CoreV1().Nodes().Create, node)
	}
	labels := map[string]string{"app": "agent"}
	daemonSets := c.Client.AppsV1().DaemonSets(ns)
	controllertest.Create(t, daemonSets.Create, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "klab/app:v1"}}},
			},
		},
	})
	viewer, err := polymorphichelpers.StatusViewerFor(schema.GroupKind{Group: "apps", Kind: "DaemonSet"})
	if err != nil {
		t.Fatal(err)
	}
	rolledOut := func(image string) {
		t.Helper()
		c.WaitFor(t, 30*time.Second, "rollout of "+image, func() (bool, string) {
			playSchedulerAndKubelets(t, c)
			ds, err := daemonSets.Get(ctx, "agent", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ds)
			if err != nil {
				t.Fatal(err)
			}
			msg, done, err := viewer.Status(&unstructured.Unstructured{Object: u}, 0)
			var where []string
			for _, p := range c.Pods(t) {
				where = append(where, fmt.Sprintf("%s@%s(%s)", p.Name, p.Spec.NodeName, p.Spec.Containers[0].Image))
			}
			ok := done && err == nil && ds.Status.DesiredNumberScheduled == 1 && len(where) == 1 &&
				c.Pods(t)[0].Spec.NodeName == "node-1" && c.Pods(t)[0].Spec.Containers[0].Image == image
			return ok, fmt.Sprintf("kubectl says %q (%v); status %+v; pods %v", msg, err, ds.Status, where)
		})
	}
	rolledOut("klab/app:v1")

	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ds, err := daemonSets.Get(ctx, "agent", metav1.GetOptions{})
		if err != nil {
			return err
		}
		ds.Spec.Template.Spec.Containers[0].Image = "klab/app:v2"
		_, err = daemonSets.Update(ctx, ds, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	rolledOut("klab/app:v2")
}

// playSchedulerAndKubelets binds each unbound pod to the node its
// affinity names, marks bound pods Running and Ready, and finishes
// deletions.
func playSchedulerAndKubelets(t *testing.T, c *controllertest.Cluster) {
	t.Helper()
	c.FinishTerminating(t)
	for _, p := range c.Pods(t) {
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Spec.NodeName == "" {
			node, err := targetNodeName(&p)
			if err != nil {
				t.Fatal(err)
			}
			binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
			if err := c.Client.CoreV1().Pods(controllertest.Namespace).Bind(context.Background(), binding, metav1.CreateOptions{}); err != nil {
				t.Fatalf("bind %s to %s: %v", p.Name, node, err)
			}
			continue // marked ready once the binding shows
		}
		if p.Status.Phase != corev1.PodRunning {
			c.MarkRunning(t, &p, true)
		}
	}
}
