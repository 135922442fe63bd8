package deployment

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
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/polymorphichelpers"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil/controllertest"
	"github.com/klab-dev/klab/cluster/controller/replicaset"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestRolloutAndUndoAgainstAPIServer runs the Deployment and ReplicaSet
// controllers against klab's real API server and drives them with
// kubectl's own code: `kubectl rollout status` (its StatusViewer, with
// --revision) must finish for each rollout, and `kubectl rollout undo`
// (its Rollbacker) must bring back the first ReplicaSet as revision 3.
func TestRolloutAndUndoAgainstAPIServer(t *testing.T) {
	testenv.EndToEnd(t)
	c := controllertest.StartCluster(t, Init, replicaset.Init)
	ns := controllertest.Namespace
	ctx := context.Background()
	deployments := c.Client.AppsV1().Deployments(ns)
	labels := map[string]string{"app": "web"}
	controllertest.Create(t, deployments.Create, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "klab/app:v1"}}},
			},
		},
	})
	viewer, err := polymorphichelpers.StatusViewerFor(schema.GroupKind{Group: "apps", Kind: "Deployment"})
	if err != nil {
		t.Fatal(err)
	}
	rolledOut := func(revision int64) {
		t.Helper()
		c.WaitFor(t, 30*time.Second, fmt.Sprintf("rollout of revision %d", revision), func() (bool, string) {
			c.ReadyAll(t)
			d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
			if err != nil {
				t.Fatal(err)
			}
			msg, done, err := viewer.Status(&unstructured.Unstructured{Object: u}, revision)
			return done && err == nil, fmt.Sprintf("kubectl says %q (%v); status %+v", msg, err, d.Status)
		})
	}
	rolledOut(1)

	// A new image: a rolling update to revision 2.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = "klab/app:v2"
		_, err = deployments.Update(ctx, d, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	rolledOut(2)
	first := replicaSetWithImage(t, c, "klab/app:v1")
	if *first.Spec.Replicas != 0 || first.Annotations[RevisionAnnotation] != "1" {
		t.Errorf("first ReplicaSet %s: %d replicas, revision %q; want 0 and 1", first.Name, *first.Spec.Replicas, first.Annotations[RevisionAnnotation])
	}

	// kubectl rollout undo: back to the previous revision's template.
	d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rollbacker, err := polymorphichelpers.RollbackerFor(schema.GroupKind{Group: "apps", Kind: "Deployment"}, c.Client)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rollbacker.Rollback(d, nil, 0, cmdutil.DryRunNone); err != nil {
		t.Fatalf("kubectl rollout undo: %v", err)
	}
	rolledOut(3)
	reused := replicaSetWithImage(t, c, "klab/app:v1")
	if reused.Name != first.Name || reused.Annotations[RevisionAnnotation] != "3" || reused.Annotations[RevisionHistoryAnnotation] != "1" || *reused.Spec.Replicas != 2 {
		t.Errorf("after undo: ReplicaSet %s revision %q history %q replicas %d; want %s reused as revision 3 (history 1) with 2 replicas",
			reused.Name, reused.Annotations[RevisionAnnotation], reused.Annotations[RevisionHistoryAnnotation], *reused.Spec.Replicas, first.Name)
	}
	list, err := c.Client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 {
		t.Errorf("ReplicaSets after undo: %d (%v), want the same 2", len(list.Items), err)
	}
}

// replicaSetWithImage returns the test namespace's ReplicaSet running image.
func replicaSetWithImage(t *testing.T, c *controllertest.Cluster, image string) *appsv1.ReplicaSet {
	t.Helper()
	list, err := c.Client.AppsV1().ReplicaSets(controllertest.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if list.Items[i].Spec.Template.Spec.Containers[0].Image == image {
			return &list.Items[i]
		}
	}
	t.Fatalf("no ReplicaSet runs %s", image)
	return nil
}
