package apiserver_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/internal/testenv"
)

// upstreamAll is the "all" category of a kube-apiserver of the version klab
// serves: the resources whose REST storage implements Categories() with
// "all" (pkg/registry/*/storage), and nothing else.
var upstreamAll = []string{
	"pods", "replicationcontrollers", "services",
	"daemonsets.apps", "deployments.apps", "replicasets.apps", "statefulsets.apps",
	"horizontalpodautoscalers.autoscaling",
	"cronjobs.batch", "jobs.batch",
}

// TestGetAll checks `kubectl get all`: discovery puts exactly upstream's
// resources in the "all" category, and a namespace holding one object of
// every kind lists each of them and nothing else.
func TestGetAll(t *testing.T) {
	testenv.EndToEnd(t)
	t.Parallel()
	c := apiservertest.New(t, apiservertest.Options{})
	ctx := testContext(t, testTimeout)
	cs := adminClient(t, c)

	_, lists, err := cs.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	var inAll []string
	served := map[string]bool{}
	for _, list := range lists {
		group := strings.Split(list.GroupVersion, "/")[0]
		if !strings.Contains(list.GroupVersion, "/") {
			group = ""
		}
		for _, r := range list.APIResources {
			name := r.Name
			if group != "" {
				name += "." + group
			}
			// A resource served in two versions (autoscaling v2 and v1
			// HPAs) is one resource, in the category once.
			if slices.Contains(r.Categories, "all") && !slices.Contains(inAll, name) {
				inAll = append(inAll, name)
			}
			served[name] = true
		}
	}
	var want []string
	for _, r := range upstreamAll {
		// HorizontalPodAutoscalers join when autoscaling is served.
		if served[r] {
			want = append(want, r)
		}
	}
	slices.Sort(inAll)
	slices.Sort(want)
	if !slices.Equal(inAll, want) {
		t.Errorf("category all is %v; upstream's (of what klab serves) is %v", inAll, want)
	}

	createNamespace(ctx, t, cs, "all")
	ns := "all"
	labels := map[string]string{"app": "one"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec("")}
	selector := &metav1.LabelSelector{MatchLabels: labels}
	jobTemplate := corev1.PodTemplateSpec{Spec: podSpec("")}
	jobTemplate.Spec.RestartPolicy = corev1.RestartPolicyNever
	create := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("create %s: %v", what, err)
		}
	}
	meta := metav1.ObjectMeta{Name: "one", Namespace: ns}
	_, err = cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: meta, Spec: podSpec("")}, metav1.CreateOptions{})
	create("pod", err)
	_, err = cs.CoreV1().ReplicationControllers(ns).Create(ctx, &corev1.ReplicationController{ObjectMeta: meta,
		Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](0), Template: &template}}, metav1.CreateOptions{})
	create("replicationcontroller", err)
	_, err = cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: meta,
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	create("service", err)
	_, err = cs.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{ObjectMeta: meta,
		Spec: appsv1.DaemonSetSpec{Selector: selector, Template: template}}, metav1.CreateOptions{})
	create("daemonset", err)
	_, err = cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0), Selector: selector, Template: template}}, metav1.CreateOptions{})
	create("deployment", err)
	_, err = cs.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: meta,
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](0), Selector: selector, Template: template}}, metav1.CreateOptions{})
	create("replicaset", err)
	_, err = cs.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: meta,
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](0), ServiceName: "one", Selector: selector, Template: template}}, metav1.CreateOptions{})
	create("statefulset", err)
	_, err = cs.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{ObjectMeta: meta,
		Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: jobTemplate}}, metav1.CreateOptions{})
	create("job", err)
	_, err = cs.BatchV1().CronJobs(ns).Create(ctx, &batchv1.CronJob{ObjectMeta: meta,
		Spec: batchv1.CronJobSpec{Schedule: "0 0 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: jobTemplate}}}}, metav1.CreateOptions{})
	create("cronjob", err)
	// Kinds outside the category stay out of get all.
	_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, "one", nil), metav1.CreateOptions{})
	create("configmap", err)
	_, err = cs.CoreV1().PodTemplates(ns).Create(ctx, &corev1.PodTemplate{ObjectMeta: meta, Template: template}, metav1.CreateOptions{})
	create("podtemplate", err)

	k := newKubectl(t, c, auth.AdminUser)
	out := k.ok(ctx, t, "-n", ns, "get", "all", "-o", "name")
	got := strings.Fields(out)
	slices.Sort(got)
	wantNames := []string{
		"cronjob.batch/one", "daemonset.apps/one", "deployment.apps/one", "job.batch/one", "pod/one",
		"replicaset.apps/one", "replicationcontroller/one", "service/one", "statefulset.apps/one",
	}
	slices.Sort(wantNames)
	if !slices.Equal(got, wantNames) {
		t.Errorf("kubectl get all -o name printed %v; want %v", got, wantNames)
	}
	// The table view prints one block per kind, rc included.
	table := k.ok(ctx, t, "-n", ns, "get", "all")
	for _, want := range []string{"replicationcontroller/one", "pod/one", "service/one", "cronjob.batch/one"} {
		if !strings.Contains(table, want) {
			t.Errorf("kubectl get all: no %s in\n%s", want, table)
		}
	}
}
