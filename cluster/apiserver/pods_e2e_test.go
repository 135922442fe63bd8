package apiserver_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
)

// TestPods: what the API server does for pods beyond plain storage —
// admission defaults, graceful deletion, binding — as the scheduler and
// kubelets rely on it.
func TestPods(t *testing.T) {
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	cs := adminClient(t, c)
	ctx := testContext(t, testTimeout)
	const ns = "pods"
	createNamespace(ctx, t, cs, ns)
	pods := cs.CoreV1().Pods(ns)

	t.Run("admission defaults", func(t *testing.T) {
		created, err := pods.Create(ctx, pod(ns, "defaults", ""), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		spec := created.Spec
		// serviceAccount is the deprecated twin of serviceAccountName that
		// v1 objects carry.
		if spec.ServiceAccountName != "default" || spec.DeprecatedServiceAccount != "default" {
			t.Errorf("serviceAccountName %q serviceAccount %q; want both \"default\"", spec.ServiceAccountName, spec.DeprecatedServiceAccount)
		}
		if created.Status.Phase != corev1.PodPending || created.Status.QOSClass != corev1.PodQOSBestEffort {
			t.Errorf("status phase %q qosClass %q; want Pending BestEffort", created.Status.Phase, created.Status.QOSClass)
		}
		tolerated := map[string]bool{}
		for _, tol := range spec.Tolerations {
			if tol.Effect == corev1.TaintEffectNoExecute && tol.TolerationSeconds != nil && *tol.TolerationSeconds == 300 {
				tolerated[tol.Key] = true
			}
		}
		if !tolerated[corev1.TaintNodeNotReady] || !tolerated[corev1.TaintNodeUnreachable] {
			t.Errorf("tolerations %+v; want not-ready and unreachable for 300s", spec.Tolerations)
		}
		// A read-modify-write of a label, as `kubectl label` and
		// controllers do, is a valid pod update.
		created.Labels = map[string]string{"touched": "yes"}
		if _, err := pods.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Errorf("update a pod's labels: %v", err)
		}
	})

	t.Run("missing service account", func(t *testing.T) {
		p := pod(ns, "nosa", "")
		p.Spec.ServiceAccountName = "robot"
		_, err := pods.Create(ctx, p, metav1.CreateOptions{})
		wantStatus(t, err, 403, metav1.StatusReasonForbidden,
			`pods "nosa" is forbidden: error looking up service account pods/robot: serviceaccount "robot" not found`)
	})

	t.Run("graceful deletion", func(t *testing.T) {
		if _, err := pods.Create(ctx, pod(ns, "on-node", "node-1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := pods.Delete(ctx, "on-node", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete: %v", err)
		}
		// Its kubelet has to stop it first: the pod stays, marked.
		marked, err := pods.Get(ctx, "on-node", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get after a graceful delete: %v", err)
		}
		if marked.DeletionTimestamp == nil || marked.DeletionGracePeriodSeconds == nil || *marked.DeletionGracePeriodSeconds != 30 {
			t.Fatalf("deletionTimestamp %v deletionGracePeriodSeconds %v; want set and 30", marked.DeletionTimestamp, marked.DeletionGracePeriodSeconds)
		}
		// Asking again with a longer grace period changes nothing.
		if err := pods.Delete(ctx, "on-node", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](60)}); err != nil {
			t.Fatal(err)
		}
		again, err := pods.Get(ctx, "on-node", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *again.DeletionGracePeriodSeconds != 30 || !again.DeletionTimestamp.Equal(marked.DeletionTimestamp) {
			t.Errorf("a longer grace period moved the deletion: %v %d", again.DeletionTimestamp, *again.DeletionGracePeriodSeconds)
		}
		// The kubelet's final delete.
		if err := pods.Delete(ctx, "on-node", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		_, err = pods.Get(ctx, "on-node", metav1.GetOptions{})
		wantStatus(t, err, 404, metav1.StatusReasonNotFound, `pods "on-node" not found`)
	})

	t.Run("unscheduled pod goes at once", func(t *testing.T) {
		if _, err := pods.Create(ctx, pod(ns, "pending", ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := pods.Delete(ctx, "pending", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := pods.Get(ctx, "pending", metav1.GetOptions{})
		wantStatus(t, err, 404, metav1.StatusReasonNotFound, `pods "pending" not found`)
	})

	t.Run("binding", func(t *testing.T) {
		// A kubelet's watch: its node's pods only (a field selector).
		w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-7"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if _, err := pods.Create(ctx, pod(ns, "to-bind", ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "to-bind", Namespace: ns}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-7"}}
		if err := pods.Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatalf("bind: %v", err)
		}
		bound, err := pods.Get(ctx, "to-bind", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if bound.Spec.NodeName != "node-7" {
			t.Errorf("nodeName %q; want node-7", bound.Spec.NodeName)
		}
		scheduled := false
		for _, cond := range bound.Status.Conditions {
			scheduled = scheduled || (cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionTrue)
		}
		if !scheduled {
			t.Errorf("conditions %+v; want PodScheduled True", bound.Status.Conditions)
		}
		// The pod enters the kubelet's selection: ADDED for that watch.
		select {
		case ev := <-w.ResultChan():
			p, ok := ev.Object.(*corev1.Pod)
			if ev.Type != watch.Added || !ok || p.Name != "to-bind" || p.ResourceVersion != bound.ResourceVersion {
				t.Errorf("kubelet watch: %s %v; want ADDED to-bind@%s", ev.Type, ev.Object, bound.ResourceVersion)
			}
		case <-ctx.Done():
			t.Fatal("the kubelet's watch saw nothing")
		}

		binding.Target.Name = "node-8"
		err = pods.Bind(ctx, binding, metav1.CreateOptions{})
		wantStatus(t, err, 409, metav1.StatusReasonConflict,
			`Operation cannot be fulfilled on pods/binding "to-bind": pod to-bind is already assigned to node "node-7"`)
	})
}

// TestScaleSubresource: deployments/scale and replicasets/scale read and
// write spec.replicas through the autoscaling/v1 Scale shape.
func TestScaleSubresource(t *testing.T) {
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	cs := adminClient(t, c)
	ctx := testContext(t, testTimeout)
	const ns = "scale"
	createNamespace(ctx, t, cs, ns)
	labels := map[string]string{"app": "scaled"}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec("")}}}
	created, err := cs.AppsV1().Deployments(ns).Create(ctx, deploy, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deployments := cs.AppsV1().Deployments(ns)

	// replicasNow reads the deployment itself.
	replicasNow := func(t *testing.T) (int32, int64) {
		t.Helper()
		d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *d.Spec.Replicas, d.Generation
	}

	t.Run("get", func(t *testing.T) {
		scale, err := deployments.GetScale(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if scale.Name != "web" || scale.Namespace != ns || scale.UID != created.UID || scale.Spec.Replicas != 2 || scale.Status.Selector != "app=scaled" {
			t.Errorf("scale %+v; want web, replicas 2, selector app=scaled", scale)
		}
	})
	t.Run("put", func(t *testing.T) {
		scale, err := deployments.GetScale(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		scale.Spec.Replicas = 4
		got, err := deployments.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.Replicas != 4 {
			t.Errorf("returned scale has %d replicas; want 4", got.Spec.Replicas)
		}
		if n, gen := replicasNow(t); n != 4 || gen != created.Generation+1 {
			t.Errorf("deployment has %d replicas at generation %d; want 4 at %d", n, gen, created.Generation+1)
		}
		// The scale read before that write is stale now.
		scale.Spec.Replicas = 6
		_, err = deployments.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{})
		wantStatus(t, err, 409, metav1.StatusReasonConflict, "")
	})
	t.Run("patch", func(t *testing.T) {
		scale := &autoscalingv1.Scale{}
		err := cs.AppsV1().RESTClient().Patch(types.MergePatchType).Namespace(ns).Resource("deployments").Name("web").SubResource("scale").
			Body([]byte(`{"spec":{"replicas":5}}`)).Do(ctx).Into(scale)
		if err != nil {
			t.Fatal(err)
		}
		if scale.Spec.Replicas != 5 {
			t.Errorf("returned scale has %d replicas; want 5", scale.Spec.Replicas)
		}
		if n, _ := replicasNow(t); n != 5 {
			t.Errorf("deployment has %d replicas; want 5", n)
		}
	})
	t.Run("negative", func(t *testing.T) {
		err := cs.AppsV1().RESTClient().Patch(types.MergePatchType).Namespace(ns).Resource("deployments").Name("web").SubResource("scale").
			Body([]byte(`{"spec":{"replicas":-1}}`)).Do(ctx).Error()
		wantStatus(t, err, 422, metav1.StatusReasonInvalid, "")
	})
	t.Run("replicaset", func(t *testing.T) {
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: ns}, Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec("")}}}
		if _, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		scale, err := cs.AppsV1().ReplicaSets(ns).GetScale(ctx, "rs", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		scale.Spec.Replicas = 3
		if _, err := cs.AppsV1().ReplicaSets(ns).UpdateScale(ctx, "rs", scale, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := cs.AppsV1().ReplicaSets(ns).Get(ctx, "rs", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *got.Spec.Replicas != 3 {
			t.Errorf("replica set has %d replicas; want 3", *got.Spec.Replicas)
		}
	})
	t.Run("missing", func(t *testing.T) {
		_, err := deployments.GetScale(ctx, "nothing", metav1.GetOptions{})
		wantStatus(t, err, 404, metav1.StatusReasonNotFound, `deployments.apps "nothing" not found`)
	})
}
