package endpointslice

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
)

const ns = "default"

var created = metav1.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// fixture is the sample-controller test fixture: objects go into a fake
// clientset and the informer caches, one sync runs, and its writes are
// compared with the expected actions.
type fixture struct {
	t        *testing.T
	client   *fake.Clientset
	services []*corev1.Service
	pods     []*corev1.Pod
	nodes    []*corev1.Node
	slices   []*discoveryv1.EndpointSlice
}

func newFixture(t *testing.T) *fixture {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{corev1.LabelTopologyZone: "zone-a"}}}
	return &fixture{t: t, nodes: []*corev1.Node{node}}
}

func (f *fixture) newController() *Controller {
	f.t.Helper()
	var objs []runtime.Object
	for _, o := range f.services {
		objs = append(objs, o)
	}
	for _, o := range f.pods {
		objs = append(objs, o)
	}
	for _, o := range f.nodes {
		objs = append(objs, o)
	}
	for _, o := range f.slices {
		objs = append(objs, o)
	}
	f.client = fake.NewSimpleClientset(objs...)
	// The fake API does not generate names; without this, a second slice
	// created in one sync would collide with the first.
	generated := 0
	f.client.PrependReactor("create", "endpointslices", func(action core.Action) (bool, runtime.Object, error) {
		s := action.(core.CreateAction).GetObject().(*discoveryv1.EndpointSlice)
		if s.Name == "" {
			generated++
			s.Name = s.GenerateName + "generated" + strconv.Itoa(generated)
		}
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(f.client, 0)
	c, err := newController(controllerctx.Context{
		Client:    f.client,
		Informers: factory,
		Recorder:  func(string) record.EventRecorder { return record.NewFakeRecorder(10) },
	})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, o := range f.services {
		factory.Core().V1().Services().Informer().GetIndexer().Add(o)
	}
	for _, o := range f.pods {
		factory.Core().V1().Pods().Informer().GetIndexer().Add(o)
	}
	for _, o := range f.nodes {
		factory.Core().V1().Nodes().Informer().GetIndexer().Add(o)
	}
	for _, o := range f.slices {
		factory.Discovery().V1().EndpointSlices().Informer().GetIndexer().Add(o)
	}
	return c
}

// sync runs one sync of key and returns its writes.
func (f *fixture) sync(key string) ([]core.Action, error) {
	f.t.Helper()
	c := f.newController()
	f.client.ClearActions()
	err := c.syncService(context.Background(), key)
	var out []core.Action
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "create" || a.GetVerb() == "update" || a.GetVerb() == "delete" {
			out = append(out, a)
		}
	}
	return out, err
}

func checkActions(t *testing.T, want, got []core.Action) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("got %d actions %v; want %d %v", len(got), got, len(want), want)
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.GetVerb() != g.GetVerb() || w.GetResource() != g.GetResource() {
			t.Fatalf("action %d = %s %s; want %s %s", i, g.GetVerb(), g.GetResource().Resource, w.GetVerb(), w.GetResource().Resource)
		}
		// Create and update actions have the same method set, so the verb
		// tells them apart.
		switch w.GetVerb() {
		case "create":
			compareObjects(t, i, w.(core.CreateAction).GetObject(), g.(core.CreateAction).GetObject())
		case "update":
			compareObjects(t, i, w.(core.UpdateAction).GetObject(), g.(core.UpdateAction).GetObject())
		case "delete":
			if w.(core.DeleteAction).GetName() != g.(core.DeleteAction).GetName() {
				t.Errorf("action %d deleted %s; want %s", i, g.(core.DeleteAction).GetName(), w.(core.DeleteAction).GetName())
			}
		}
	}
}

func compareObjects(t *testing.T, i int, want, got runtime.Object) {
	t.Helper()
	if !apiequality.Semantic.DeepEqual(want, got) {
		t.Errorf("action %d object differs (-want +got):\n%s", i, cmp.Diff(want, got))
	}
}

var slicesResource = discoveryv1.SchemeGroupVersion.WithResource("endpointslices")

func createSlice(s *discoveryv1.EndpointSlice) core.Action {
	return core.NewCreateAction(slicesResource, s.Namespace, s)
}

func updateSlice(s *discoveryv1.EndpointSlice) core.Action {
	return core.NewUpdateAction(slicesResource, s.Namespace, s)
}

func deleteSlice(s *discoveryv1.EndpointSlice) core.Action {
	return core.NewDeleteAction(slicesResource, s.Namespace, s.Name)
}

func newService(name string, mutate ...func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name), CreationTimestamp: created,
			Labels: map[string]string{"tier": "front"}},
		Spec: corev1.ServiceSpec{
			Selector:   map[string]string{"app": name},
			ClusterIP:  "10.96.0.10",
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports:      []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("web")}},
		},
	}
	for _, m := range mutate {
		m(svc)
	}
	return svc
}

func newPod(name, app, ip string, ready bool, mutate ...func(*corev1.Pod)) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name), ResourceVersion: "1",
			Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app",
			Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}}},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			PodIP:      ip,
			PodIPs:     []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}},
		},
	}
	for _, m := range mutate {
		m(pod)
	}
	return pod
}

// endpoint is a pod's expected endpoint on node-1 in zone-a.
func endpoint(pod *corev1.Pod, ready, serving, terminating bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{
		Addresses:  []string{pod.Status.PodIP},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
		NodeName:   ptr.To("node-1"),
		Zone:       ptr.To("zone-a"),
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod.Name, UID: pod.UID},
	}
}

func httpPorts(port int32) []discoveryv1.EndpointPort {
	return []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}}
}

// sliceFor is a slice of svc as the controller writes it; name "" is a
// slice about to be created.
func sliceFor(svc *corev1.Service, name string, ports []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	if eps == nil {
		eps = []discoveryv1.Endpoint{}
	}
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:         name,
			GenerateName: svc.Name + "-",
			Namespace:    svc.Namespace,
			Labels: map[string]string{"tier": "front", discoveryv1.LabelServiceName: svc.Name,
				discoveryv1.LabelManagedBy: controllerQualifiedName},
			Annotations: map[string]string{corev1.EndpointsLastChangeTriggerTime: created.UTC().Format(time.RFC3339Nano)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       ports,
		Endpoints:   eps,
	}
	if name != "" {
		s.ResourceVersion = "5"
	}
	return s
}

func terminating(p *corev1.Pod) {
	now := metav1.Now()
	p.DeletionTimestamp = &now
}

func TestSyncService(t *testing.T) {
	web := newService("web")
	ready1 := newPod("web-1", "web", "10.244.1.2", true)
	ready2 := newPod("web-2", "web", "10.244.1.3", true)
	notReady := newPod("web-3", "web", "10.244.1.4", false)
	dying := newPod("web-4", "web", "10.244.1.5", true, terminating)
	port9090 := newPod("web-5", "web", "10.244.1.6", true, func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 9090 })

	current := sliceFor(web, "web-abcde", httpPorts(8080), endpoint(ready1, true, true, false), endpoint(ready2, true, true, false))
	afterFlip := sliceFor(web, "web-abcde", httpPorts(8080), endpoint(ready1, true, true, false), endpoint(ready2, false, false, false))
	afterRemoval := sliceFor(web, "web-abcde", httpPorts(8080), endpoint(ready1, true, true, false))
	placeholder := sliceFor(web, "web-empty", []discoveryv1.EndpointPort{})
	emptied := sliceFor(web, "web-abcde", []discoveryv1.EndpointPort{})
	emptied.ResourceVersion = current.ResourceVersion
	oldOwner := current.DeepCopy()
	oldOwner.Name = "web-old"
	oldOwner.OwnerReferences[0].UID = "uid-of-a-deleted-web"

	tests := []struct {
		name     string
		services []*corev1.Service
		pods     []*corev1.Pod
		slices   []*discoveryv1.EndpointSlice
		key      string
		want     []core.Action
	}{
		{
			name:     "new service gets one slice with conditions, node, zone and pod",
			services: []*corev1.Service{web},
			pods:     []*corev1.Pod{notReady, ready2, ready1, dying},
			key:      "default/web",
			want: []core.Action{createSlice(sliceFor(web, "", httpPorts(8080),
				endpoint(ready1, true, true, false), endpoint(ready2, true, true, false),
				endpoint(notReady, false, false, false), endpoint(dying, false, true, true)))},
		},
		{
			name: "publishNotReadyAddresses makes every endpoint ready",
			services: []*corev1.Service{newService("web", func(s *corev1.Service) {
				s.Spec.PublishNotReadyAddresses = true
			})},
			pods: []*corev1.Pod{notReady},
			key:  "default/web",
			want: []core.Action{createSlice(sliceFor(web, "", httpPorts(8080), endpoint(notReady, true, false, false)))},
		},
		{
			name:     "pods serving different ports get different slices",
			services: []*corev1.Service{web},
			pods:     []*corev1.Pod{ready1, port9090},
			key:      "default/web",
			want: []core.Action{
				createSlice(sliceFor(web, "", httpPorts(8080), endpoint(ready1, true, true, false))),
				createSlice(sliceFor(web, "", httpPorts(9090), endpoint(port9090, true, true, false))),
			},
		},
		{
			name:     "service without pods gets a placeholder",
			services: []*corev1.Service{web},
			key:      "default/web",
			want:     []core.Action{createSlice(sliceFor(web, "", []discoveryv1.EndpointPort{}))},
		},
		{
			name:     "existing placeholder is kept",
			services: []*corev1.Service{web},
			slices:   []*discoveryv1.EndpointSlice{placeholder},
			key:      "default/web",
		},
		{
			name:     "nothing changed writes nothing",
			services: []*corev1.Service{web},
			pods:     []*corev1.Pod{ready1, ready2},
			slices:   []*discoveryv1.EndpointSlice{current},
			key:      "default/web",
		},
		{
			name:     "readiness change updates the slice in place",
			services: []*corev1.Service{web},
			pods:     []*corev1.Pod{ready1, newPod("web-2", "web", "10.244.1.3", false)},
			slices:   []*discoveryv1.EndpointSlice{current},
			key:      "default/web",
			want:     []core.Action{updateSlice(afterFlip)},
		},
		{
			name:     "a deleted pod leaves its slice",
			services: []*corev1.Service{web},
			pods:     []*corev1.Pod{ready1},
			slices:   []*discoveryv1.EndpointSlice{current},
			key:      "default/web",
			want:     []core.Action{updateSlice(afterRemoval)},
		},
		{
			name:     "last pod gone turns the slice into the placeholder",
			services: []*corev1.Service{web},
			slices:   []*discoveryv1.EndpointSlice{current},
			key:      "default/web",
			want:     []core.Action{updateSlice(emptied)},
		},
		{
			name:     "slices of an older service of the same name are replaced",
			services: []*corev1.Service{web},
			pods:     []*corev1.Pod{ready1},
			slices:   []*discoveryv1.EndpointSlice{oldOwner},
			key:      "default/web",
			want: []core.Action{
				createSlice(sliceFor(web, "", httpPorts(8080), endpoint(ready1, true, true, false))),
				deleteSlice(oldOwner),
			},
		},
		{
			name:     "service without selector is left alone",
			services: []*corev1.Service{newService("web", func(s *corev1.Service) { s.Spec.Selector = nil })},
			pods:     []*corev1.Pod{ready1},
			key:      "default/web",
		},
		{
			name:   "deleted service leaves its slices to the garbage collector",
			pods:   []*corev1.Pod{ready1},
			slices: []*discoveryv1.EndpointSlice{current},
			key:    "default/web",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.services, f.pods, f.slices = tt.services, tt.pods, tt.slices
			got, err := f.sync(tt.key)
			if err != nil {
				t.Fatalf("sync: %v", err)
			}
			checkActions(t, tt.want, got)
		})
	}
}
