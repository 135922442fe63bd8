package resourcequota

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil/controllertest"
	"github.com/klab-dev/klab/internal/testenv"
)

func resources(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func quotaPod(name, cpu string) *corev1.Pod {
	c := corev1.Container{Name: "app", Image: "nginx:1.27"}
	if cpu != "" {
		c.Resources = corev1.ResourceRequirements{Requests: resources("cpu", cpu, "memory", "64Mi"), Limits: resources("cpu", cpu, "memory", "64Mi")}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: controllertest.Namespace}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
}

// usedString prints a quota's status as "name=used/hard" pairs in name order.
func usedString(q *corev1.ResourceQuota) string {
	var parts []string
	for _, n := range sortedKeys(q.Spec.Hard) {
		used, hard := q.Status.Used[n], q.Status.Hard[n]
		parts = append(parts, fmt.Sprintf("%s=%s/%s", n, used.String(), hard.String()))
	}
	return strings.Join(parts, " ")
}

func sortedKeys(l corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	for k := range l {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestAgainstAPIServer runs the controller against klab's real API server
// and its ResourceQuota admission: a new quota's status is filled in, the
// admission charges creates and refuses the one too many with upstream's
// message, deletes give usage back (so the refused create then works),
// and object-count quotas count Deployments and ConfigMaps.
func TestAgainstAPIServer(t *testing.T) {
	testenv.EndToEnd(t)
	c := controllertest.StartCluster(t, Init)
	ns := controllertest.Namespace
	ctx := context.Background()
	quotas := c.Client.CoreV1().ResourceQuotas(ns)
	controllertest.Create(t, quotas.Create, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "compute", Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: resources("pods", "2", "requests.cpu", "1", "limits.memory", "256Mi")},
	})
	controllertest.Create(t, quotas.Create, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "objects", Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: resources("count/deployments.apps", "1", "configmaps", "1")},
	})
	wait := func(name, want string) {
		t.Helper()
		c.WaitFor(t, 30*time.Second, "quota "+name+" at "+want, func() (bool, string) {
			q, err := quotas.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := usedString(q)
			return got == want, got
		})
	}
	wait("compute", "limits.memory=0/256Mi pods=0/2 requests.cpu=0/1")
	wait("objects", "configmaps=0/1 count/deployments.apps=0/1")

	pods := c.Client.CoreV1().Pods(ns)
	controllertest.Create(t, pods.Create, quotaPod("a", "400m"))
	controllertest.Create(t, pods.Create, quotaPod("b", "400m"))
	wait("compute", "limits.memory=128Mi/256Mi pods=2/2 requests.cpu=800m/1")

	_, err := pods.Create(ctx, quotaPod("c", "400m"), metav1.CreateOptions{})
	want := `pods "c" is forbidden: exceeded quota: compute, requested: pods=1,requests.cpu=400m, used: pods=2,requests.cpu=800m, limited: pods=2,requests.cpu=1`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("third pod: %v\nwant %s", err, want)
	}
	_, err = pods.Create(ctx, quotaPod("bare", ""), metav1.CreateOptions{})
	want = `pods "bare" is forbidden: failed quota: compute: must specify limits.memory for: app; requests.cpu for: app`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("pod without resources: %v\nwant %s", err, want)
	}

	// A delete gives its usage back.
	if err := pods.Delete(ctx, "a", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	wait("compute", "limits.memory=64Mi/256Mi pods=1/2 requests.cpu=400m/1")
	controllertest.Create(t, pods.Create, quotaPod("c", "400m"))
	wait("compute", "limits.memory=128Mi/256Mi pods=2/2 requests.cpu=800m/1")

	// Object counts.
	cms := c.Client.CoreV1().ConfigMaps(ns)
	controllertest.Create(t, cms.Create, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "one", Namespace: ns}})
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "two", Namespace: ns}}, metav1.CreateOptions{})
	want = `configmaps "two" is forbidden: exceeded quota: objects, requested: configmaps=1, used: configmaps=1, limited: configmaps=1`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("second configmap: %v\nwant %s", err, want)
	}
	replicas := int32(0)
	deploy := func(name string) *appsv1.Deployment {
		labels := map[string]string{"app": name}
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: quotaPod("x", "100m").Spec}},
		}
	}
	deployments := c.Client.AppsV1().Deployments(ns)
	controllertest.Create(t, deployments.Create, deploy("web"))
	_, err = deployments.Create(ctx, deploy("api"), metav1.CreateOptions{})
	want = `deployments.apps "api" is forbidden: exceeded quota: objects, requested: count/deployments.apps=1, used: count/deployments.apps=1, limited: count/deployments.apps=1`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("second deployment: %v\nwant %s", err, want)
	}
	wait("objects", "configmaps=1/1 count/deployments.apps=1/1")
	if err := deployments.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("objects", "configmaps=1/1 count/deployments.apps=0/1")
	controllertest.Create(t, deployments.Create, deploy("api"))

	// Node ports: a Service turned NodePort is charged on update.
	controllertest.Create(t, quotas.Create, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "ports", Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: resources("services.nodeports", "1")},
	})
	wait("ports", "services.nodeports=0/1")
	services := c.Client.CoreV1().Services(ns)
	svc := controllertest.Create(t, services.Create, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "https", Port: 443}}},
	})
	svc.Spec.Type = corev1.ServiceTypeNodePort
	_, err = services.Update(ctx, svc, metav1.UpdateOptions{})
	want = `services "web" is forbidden: exceeded quota: ports, requested: services.nodeports=2, used: services.nodeports=0, limited: services.nodeports=1`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("service to NodePort with two ports: %v\nwant %s", err, want)
	}
	svc, err = services.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Spec.Type = corev1.ServiceTypeNodePort
	svc.Spec.Ports = svc.Spec.Ports[:1]
	if _, err = services.Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("service to NodePort with one port: %v", err)
	}
	wait("ports", "services.nodeports=1/1")
	// Deleting it gives its port back.
	if err := services.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("ports", "services.nodeports=0/1")
}
