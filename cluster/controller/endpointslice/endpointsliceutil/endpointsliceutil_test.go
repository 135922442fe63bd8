package endpointsliceutil

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func pod(mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-p", ResourceVersion: "1", Labels: map[string]string{"app": "a"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestShouldPodBeInEndpoints(t *testing.T) {
	deleted := func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.Now()) }
	tests := []struct {
		name               string
		pod                *corev1.Pod
		includeTerminating bool
		want               bool
	}{
		{"running pod with an IP", pod(), false, true},
		{"no IP yet", pod(func(p *corev1.Pod) { p.Status.PodIP, p.Status.PodIPs = "", nil }), false, false},
		{"succeeded", pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), true, false},
		{"failed", pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), true, false},
		{"terminating, excluded", pod(deleted), false, false},
		{"terminating, included", pod(deleted), true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ShouldPodBeInEndpoints(tt.pod, tt.includeTerminating); got != tt.want {
				t.Errorf("ShouldPodBeInEndpoints = %t; want %t", got, tt.want)
			}
		})
	}
}

func TestFindPort(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	sidecar := func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always,
			Ports: []corev1.ContainerPort{{Name: "admin", ContainerPort: 15000, Protocol: corev1.ProtocolTCP}}}}
	}
	tests := []struct {
		name    string
		pod     *corev1.Pod
		port    corev1.ServicePort
		want    int
		wantErr bool
	}{
		{"number", pod(), corev1.ServicePort{Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9000)}, 9000, false},
		{"name", pod(), corev1.ServicePort{Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}, 8080, false},
		{"name with another protocol", pod(), corev1.ServicePort{Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("http")}, 0, true},
		{"unknown name", pod(), corev1.ServicePort{Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("grpc")}, 0, true},
		{"sidecar port", pod(sidecar), corev1.ServicePort{Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("admin")}, 15000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FindPort(tt.pod, &tt.port)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("FindPort = %d, %v; want %d, error %t", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestServicesToUpdateOnPodChange(t *testing.T) {
	client := fake.NewSimpleClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	indexer := factory.Core().V1().Services().Informer().GetIndexer()
	for name, selector := range map[string]map[string]string{"sa": {"app": "a"}, "sb": {"app": "b"}, "all-a": {"app": "a"}, "manual": nil} {
		indexer.Add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: corev1.ServiceSpec{Selector: selector}})
	}
	lister := factory.Core().V1().Services().Lister()
	newer := func(mutate ...func(*corev1.Pod)) *corev1.Pod {
		return pod(append([]func(*corev1.Pod){func(p *corev1.Pod) { p.ResourceVersion = "2" }}, mutate...)...)
	}
	relabel := func(p *corev1.Pod) { p.Labels = map[string]string{"app": "b"} }
	notReady := func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }
	tests := []struct {
		name string
		cur  *corev1.Pod
		want sets.Set[string]
	}{
		{"resync (same resourceVersion)", pod(), nil},
		{"annotation only", newer(func(p *corev1.Pod) { p.Annotations = map[string]string{"x": "y"} }), nil},
		{"readiness", newer(notReady), sets.New("ns/sa", "ns/all-a")},
		{"labels only: services joined and left", newer(relabel), sets.New("ns/sa", "ns/all-a", "ns/sb")},
		{"labels and IP: every service before and after", newer(relabel, func(p *corev1.Pod) { p.Status.PodIPs[0].IP = "10.0.0.9" }),
			sets.New("ns/sa", "ns/all-a", "ns/sb")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ServicesToUpdateOnPodChange(lister, pod(), tt.cur)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(tt.want) && !(got.Len() == 0 && tt.want.Len() == 0) {
				t.Errorf("services %v; want %v", sets.List(got), sets.List(tt.want))
			}
		})
	}
}

func TestTriggerTimeTracker(t *testing.T) {
	created := metav1.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", CreationTimestamp: created}}
	readyAt := func(ts time.Time) *corev1.Pod {
		return pod(func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(ts) })
	}
	t1, t2 := created.Add(time.Minute), created.Add(2*time.Minute)
	tr := NewTriggerTimeTracker()
	steps := []struct {
		name string
		pods []*corev1.Pod
		want time.Time
	}{
		{"a new service triggers at its creation", []*corev1.Pod{readyAt(t1)}, created.Time},
		{"nothing changed: no trigger time", []*corev1.Pod{readyAt(t1)}, time.Time{}},
		{"a readiness transition triggers at its time", []*corev1.Pod{readyAt(t2)}, t2},
	}
	for _, s := range steps {
		if got := tr.ComputeEndpointLastChangeTriggerTime("ns", svc, s.pods); !got.Equal(s.want) {
			t.Errorf("%s: trigger time %v; want %v", s.name, got, s.want)
		}
	}
}
