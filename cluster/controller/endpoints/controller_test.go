package endpoints

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
)

const ns = "default"

var created = metav1.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// fixture is the sample-controller test fixture: objects go into a fake
// clientset and into the informer caches, one sync runs, and the actions it
// sent to the API are compared with the expected ones.
type fixture struct {
	t         *testing.T
	client    *fake.Clientset
	services  []*corev1.Service
	pods      []*corev1.Pod
	endpoints []*corev1.Endpoints
}

func newFixture(t *testing.T) *fixture { return &fixture{t: t} }

func (f *fixture) newController() *Controller {
	f.t.Helper()
	var objs []runtime.Object
	for _, o := range f.services {
		objs = append(objs, o)
	}
	for _, o := range f.pods {
		objs = append(objs, o)
	}
	for _, o := range f.endpoints {
		objs = append(objs, o)
	}
	f.client = fake.NewSimpleClientset(objs...)
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
	for _, o := range f.endpoints {
		factory.Core().V1().Endpoints().Informer().GetIndexer().Add(o)
	}
	return c
}

// run syncs key and checks the write actions against want.
func (f *fixture) run(key string, want []core.Action) {
	f.t.Helper()
	c := f.newController()
	f.client.ClearActions()
	if err := c.syncService(context.Background(), key); err != nil {
		f.t.Fatalf("sync %s: %v", key, err)
	}
	checkActions(f.t, want, writes(f.client.Actions()))
}

// writes drops the reads informers and listers make.
func writes(actions []core.Action) []core.Action {
	var out []core.Action
	for _, a := range actions {
		if a.GetVerb() == "list" || a.GetVerb() == "watch" || a.GetVerb() == "get" {
			continue
		}
		out = append(out, a)
	}
	return out
}

func checkActions(t *testing.T, want, got []core.Action) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("got %d actions %v; want %d %v", len(got), got, len(want), want)
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.GetVerb() != g.GetVerb() || w.GetResource() != g.GetResource() || w.GetNamespace() != g.GetNamespace() {
			t.Fatalf("action %d = %s %s/%s; want %s %s/%s", i, g.GetVerb(), g.GetNamespace(), g.GetResource().Resource,
				w.GetVerb(), w.GetNamespace(), w.GetResource().Resource)
		}
		// Create and update actions have the same method set, so the verb
		// tells them apart.
		switch w.GetVerb() {
		case "create", "update":
			wantObj, gotObj := w.(core.CreateAction).GetObject(), g.(core.CreateAction).GetObject()
			if !apiequality.Semantic.DeepEqual(wantObj, gotObj) {
				t.Errorf("action %d %s object differs (-want +got):\n%s", i, w.GetVerb(), cmp.Diff(wantObj, gotObj))
			}
		case "delete":
			if w.(core.DeleteAction).GetName() != g.(core.DeleteAction).GetName() {
				t.Errorf("action %d deleted %s; want %s", i, g.(core.DeleteAction).GetName(), w.(core.DeleteAction).GetName())
			}
		}
	}
}

func newService(name string, mutate ...func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name), CreationTimestamp: created,
			Labels: map[string]string{"app": name}},
		Spec: corev1.ServiceSpec{
			Selector:   map[string]string{"app": name},
			ClusterIP:  "10.96.0.10",
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports:      []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}},
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

func address(pod *corev1.Pod) corev1.EndpointAddress {
	node := pod.Spec.NodeName
	return corev1.EndpointAddress{
		IP:        pod.Status.PodIP,
		NodeName:  &node,
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
}

func httpPort(port int32) corev1.EndpointPort {
	return corev1.EndpointPort{Name: "http", Port: port, Protocol: corev1.ProtocolTCP}
}

// endpointsFor is what the controller writes for svc.
func endpointsFor(svc *corev1.Service, subsets ...corev1.EndpointSubset) *corev1.Endpoints {
	labels := map[string]string{LabelManagedBy: managedByValue}
	for k, v := range svc.Labels {
		labels[k] = v
	}
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		labels[corev1.IsHeadlessService] = ""
	}
	return &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace, Labels: labels,
			Annotations: map[string]string{corev1.EndpointsLastChangeTriggerTime: created.UTC().Format(time.RFC3339Nano)}},
		Subsets: subsets,
	}
}

var endpointsResource = corev1.SchemeGroupVersion.WithResource("endpoints")

func createEndpoints(ep *corev1.Endpoints) core.Action {
	return core.NewCreateAction(endpointsResource, ep.Namespace, ep)
}

func updateEndpoints(ep *corev1.Endpoints) core.Action {
	return core.NewUpdateAction(endpointsResource, ep.Namespace, ep)
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
	other := newPod("db-1", "db", "10.244.1.9", true)

	named := newService("named", func(s *corev1.Service) {
		s.Spec.Ports[0].TargetPort = intstr.FromString("web")
	})
	named8080 := newPod("named-1", "named", "10.244.2.2", true)
	named9090 := newPod("named-2", "named", "10.244.2.3", true, func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports[0].ContainerPort = 9090
	})
	namedUDP := newPod("named-3", "named", "10.244.2.4", true, func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports[0].Protocol = corev1.ProtocolUDP // a name with another protocol does not match
	})

	publish := newService("pub", func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true })
	pubNotReady := newPod("pub-1", "pub", "10.244.3.2", false)
	pubTerminating := newPod("pub-2", "pub", "10.244.3.3", true, terminating)

	headless := newService("dns", func(s *corev1.Service) {
		s.Spec.ClusterIP = corev1.ClusterIPNone
		s.Spec.Ports = nil
	})
	hostnamed := newPod("dns-0", "dns", "10.244.4.2", true, func(p *corev1.Pod) {
		p.Spec.Hostname, p.Spec.Subdomain = "dns-0", "dns"
	})
	hostnamedAddr := address(hostnamed)
	hostnamedAddr.Hostname = "dns-0"

	unchanged := endpointsFor(web, corev1.EndpointSubset{Addresses: []corev1.EndpointAddress{address(ready1)}, Ports: []corev1.EndpointPort{httpPort(8080)}})
	unchanged.ResourceVersion = "7"
	stale := unchanged.DeepCopy()
	stale.Subsets[0].Addresses = append(stale.Subsets[0].Addresses, address(ready2))
	wantAfterFlip := unchanged.DeepCopy()
	wantAfterFlip.Subsets[0].Addresses = nil
	wantAfterFlip.Subsets[0].NotReadyAddresses = []corev1.EndpointAddress{address(ready1)}
	handWritten := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "manual", Namespace: ns}}

	tests := []struct {
		name      string
		services  []*corev1.Service
		pods      []*corev1.Pod
		endpoints []*corev1.Endpoints
		key       string
		want      []core.Action
	}{
		{
			name:     "ready and not-ready pods",
			services: []*corev1.Service{web},
			pods:     []*corev1.Pod{ready2, notReady, ready1, other},
			key:      "default/web",
			want: []core.Action{createEndpoints(endpointsFor(web, corev1.EndpointSubset{
				Addresses:         []corev1.EndpointAddress{address(ready1), address(ready2)},
				NotReadyAddresses: []corev1.EndpointAddress{address(notReady)},
				Ports:             []corev1.EndpointPort{httpPort(8080)},
			}))},
		},
		{
			name:     "named target port resolves per pod",
			services: []*corev1.Service{named},
			pods:     []*corev1.Pod{named8080, named9090, namedUDP},
			key:      "default/named",
			want: []core.Action{createEndpoints(endpointsFor(named,
				corev1.EndpointSubset{Addresses: []corev1.EndpointAddress{address(named8080)}, Ports: []corev1.EndpointPort{httpPort(8080)}},
				corev1.EndpointSubset{Addresses: []corev1.EndpointAddress{address(named9090)}, Ports: []corev1.EndpointPort{httpPort(9090)}},
			))},
		},
		{
			name:     "publishNotReadyAddresses lists not-ready and terminating pods as ready",
			services: []*corev1.Service{publish},
			pods:     []*corev1.Pod{pubNotReady, pubTerminating},
			key:      "default/pub",
			want: []core.Action{createEndpoints(endpointsFor(publish, corev1.EndpointSubset{
				Addresses: []corev1.EndpointAddress{address(pubNotReady), address(pubTerminating)},
				Ports:     []corev1.EndpointPort{httpPort(8080)},
			}))},
		},
		{
			name:     "terminating, finished and IP-less pods are left out",
			services: []*corev1.Service{web},
			pods: []*corev1.Pod{ready1,
				newPod("web-9", "web", "10.244.1.20", true, terminating),
				newPod("web-8", "web", "10.244.1.21", true, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
				newPod("web-7", "web", "", false, func(p *corev1.Pod) { p.Status.PodIPs = nil }),
			},
			key: "default/web",
			want: []core.Action{createEndpoints(endpointsFor(web, corev1.EndpointSubset{
				Addresses: []corev1.EndpointAddress{address(ready1)}, Ports: []corev1.EndpointPort{httpPort(8080)},
			}))},
		},
		{
			name:     "headless service without ports keeps addresses and hostnames",
			services: []*corev1.Service{headless},
			pods:     []*corev1.Pod{hostnamed},
			key:      "default/dns",
			want: []core.Action{createEndpoints(endpointsFor(headless, corev1.EndpointSubset{
				Addresses: []corev1.EndpointAddress{hostnamedAddr},
			}))},
		},
		{
			name:      "nothing changed writes nothing",
			services:  []*corev1.Service{web},
			pods:      []*corev1.Pod{ready1},
			endpoints: []*corev1.Endpoints{unchanged},
			key:       "default/web",
		},
		{
			name:      "a pod gone from the selector is removed",
			services:  []*corev1.Service{web},
			pods:      []*corev1.Pod{ready1},
			endpoints: []*corev1.Endpoints{stale},
			key:       "default/web",
			want:      []core.Action{updateEndpoints(unchanged)},
		},
		{
			name:      "a pod turning not ready moves to notReadyAddresses",
			services:  []*corev1.Service{web},
			pods:      []*corev1.Pod{newPod("web-1", "web", "10.244.1.2", false)},
			endpoints: []*corev1.Endpoints{unchanged},
			key:       "default/web",
			want:      []core.Action{updateEndpoints(wantAfterFlip)},
		},
		{
			name:      "service without selector is left alone",
			services:  []*corev1.Service{newService("manual", func(s *corev1.Service) { s.Spec.Selector = nil })},
			pods:      []*corev1.Pod{ready1},
			endpoints: []*corev1.Endpoints{handWritten},
			key:       "default/manual",
		},
		{
			name:      "service deleted deletes its endpoints",
			endpoints: []*corev1.Endpoints{unchanged},
			key:       "default/web",
			want:      []core.Action{core.NewDeleteAction(endpointsResource, ns, "web")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.services, f.pods, f.endpoints = tt.services, tt.pods, tt.endpoints
			f.run(tt.key, tt.want)
		})
	}
}

func TestSyncServiceTruncatesOverCapacity(t *testing.T) {
	f := newFixture(t)
	web := newService("web")
	f.services = []*corev1.Service{web}
	for i := 0; i < maxCapacity+50; i++ {
		ready := i%2 == 0
		f.pods = append(f.pods, newPod(fmt.Sprintf("web-%d", i), "web", fmt.Sprintf("10.244.%d.%d", i/250, i%250+1), ready))
	}
	c := f.newController()
	f.client.ClearActions()
	if err := c.syncService(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	actions := writes(f.client.Actions())
	if len(actions) != 1 {
		t.Fatalf("got actions %v; want one create", actions)
	}
	ep := actions[0].(core.CreateAction).GetObject().(*corev1.Endpoints)
	if got := ep.Annotations[corev1.EndpointsOverCapacity]; got != truncated {
		t.Errorf("over-capacity annotation = %q; want %q", got, truncated)
	}
	ready, notReady := len(ep.Subsets[0].Addresses), len(ep.Subsets[0].NotReadyAddresses)
	// All 525 ready addresses stay; not-ready ones fill the rest.
	if ready != 525 || ready+notReady != maxCapacity {
		t.Errorf("kept %d ready and %d not-ready addresses; want 525 ready, %d in all", ready, notReady, maxCapacity)
	}
}
