package quota

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func list(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func podWith(requests, limits corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}},
			{Name: "sidecar", Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}},
		}},
	}
}

func TestPodUsage(t *testing.T) {
	p := podWith(list("cpu", "250m", "memory", "64Mi"), list("cpu", "500m"))
	got := String(Usage(podsGR, p))
	want := "count/pods=1,cpu=500m,limits.cpu=1,memory=128Mi,pods=1,requests.cpu=500m,requests.memory=128Mi"
	if got != want {
		t.Errorf("running pod: %s\nwant %s", got, want)
	}
	p.Status.Phase = corev1.PodSucceeded
	if got := String(Usage(podsGR, p)); got != "count/pods=1" {
		t.Errorf("finished pod: %s; want only its object count", got)
	}
}

func TestServiceUsage(t *testing.T) {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}, {Port: 443}}}}
	want := "count/services=1,services=1,services.loadbalancers=0,services.nodeports=2"
	if got := String(Usage(servicesGR, svc)); got != want {
		t.Errorf("NodePort service: %s\nwant %s", got, want)
	}
}

func TestConstraints(t *testing.T) {
	p := podWith(list("cpu", "100m"), nil)
	err := Constraints([]corev1.ResourceName{"requests.cpu", "limits.memory", "count/pods", "pods"}, p)
	want := "must specify limits.memory for: app,sidecar"
	if err == nil || err.Error() != want {
		t.Errorf("Constraints = %v; want %s", err, want)
	}
	if err := Constraints([]corev1.ResourceName{"requests.cpu", "pods"}, p); err != nil {
		t.Errorf("pod stating its cpu: %v", err)
	}
}

func TestMatchesScopes(t *testing.T) {
	q := &corev1.ResourceQuota{
		Spec:   corev1.ResourceQuotaSpec{Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}},
		Status: corev1.ResourceQuotaStatus{Hard: list("pods", "1")},
	}
	for _, tc := range []struct {
		name string
		obj  *corev1.Pod
		want bool
	}{
		{"best effort", podWith(nil, nil), true},
		{"burstable", podWith(list("cpu", "1"), nil), false},
	} {
		got, err := Matches(q, podsGR, tc.obj)
		if err != nil || got != tc.want {
			t.Errorf("%s: Matches = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	// A scoped quota takes in only pods.
	if got, _ := Matches(q, schema.GroupResource{Resource: "configmaps"}, &corev1.ConfigMap{}); got {
		t.Error("a BestEffort quota matched a ConfigMap")
	}
}

func TestResourceFor(t *testing.T) {
	for name, want := range map[corev1.ResourceName]schema.GroupResource{
		"count/deployments.apps": {Group: "apps", Resource: "deployments"},
		"count/configmaps":       {Resource: "configmaps"},
		"secrets":                {Resource: "secrets"},
		"services.nodeports":     servicesGR,
		"requests.cpu":           podsGR,
		"limits.memory":          podsGR,
	} {
		if got, ok := ResourceFor(name); !ok || got != want {
			t.Errorf("ResourceFor(%s) = %v, %v; want %v", name, got, ok, want)
		}
	}
}
