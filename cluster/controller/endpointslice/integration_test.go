package endpointslice_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/controller/endpointslice"
	"github.com/klab-dev/klab/cluster/controller/garbagecollector"
)

const ns = "lab"

// startControllers runs the EndpointSlice controller and the garbage
// collector (which deletes a deleted Service's slices) against a real API
// server as system:kube-controller-manager. It returns an admin client and
// a cache of the namespace's EndpointSlices whose changes wake waiters.
func startControllers(t *testing.T) (kubernetes.Interface, *watched) {
	t.Helper()
	api := apiservertest.New(t, apiservertest.Options{})
	admin := api.Client()
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{corev1.LabelTopologyZone: "zone-a"}}}
	if _, err := admin.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := api.Config(0, auth.KubeControllerManager)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	factory := informers.NewSharedInformerFactory(client, 0)
	metaFactory := metadatainformer.NewSharedInformerFactory(meta, 0)
	cc := controllerctx.Context{
		Client:            client,
		Informers:         factory,
		Metadata:          meta,
		MetadataInformers: metaFactory,
		Recorder: func(component string) record.EventRecorder {
			return broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
		},
		Logger: slog.New(slog.DiscardHandler),
	}
	var ctrls []controllerctx.Controller
	for _, init := range []controllerctx.InitFunc{endpointslice.Init, garbagecollector.Init} {
		ctrl, err := init(ctx, cc)
		if err != nil {
			t.Fatal(err)
		}
		ctrls = append(ctrls, ctrl)
	}
	w := &watched{changed: make(chan struct{}, 1), informer: factory.Discovery().V1().EndpointSlices().Informer()}
	w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { w.poke() }, UpdateFunc: func(any, any) { w.poke() }, DeleteFunc: func(any) { w.poke() },
	})
	factory.Start(ctx.Done())
	metaFactory.Start(ctx.Done())
	var wg sync.WaitGroup
	for _, ctrl := range ctrls {
		wg.Go(func() { ctrl.Run(ctx, 2) })
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		factory.Shutdown()
		metaFactory.Shutdown()
		broadcaster.Shutdown()
	})
	return admin, w
}

// watched is an informer cache that wakes waiters on every change.
type watched struct {
	informer cache.SharedIndexInformer
	changed  chan struct{}
}

func (w *watched) poke() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// waitFor re-checks cond on every change of the cache until it holds, and
// fails the test with cond's description of the state after timeout.
func (w *watched) waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	for {
		ok, state := cond()
		if ok {
			return
		}
		select {
		case <-w.changed:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s: %s", what, state)
		}
	}
}

// slicesOf returns the cached slices of a Service.
func (w *watched) slicesOf(service string) []*discoveryv1.EndpointSlice {
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: service})
	var out []*discoveryv1.EndpointSlice
	for _, obj := range w.informer.GetStore().List() {
		s := obj.(*discoveryv1.EndpointSlice)
		if s.Namespace == ns && sel.Matches(labels.Set(s.Labels)) {
			out = append(out, s)
		}
	}
	return out
}

// endpointState is "pod:ready/serving/terminating@zone".
func endpointState(ep discoveryv1.Endpoint) string {
	return fmt.Sprintf("%s:%t/%t/%t@%s", ep.TargetRef.Name, *ep.Conditions.Ready, *ep.Conditions.Serving, *ep.Conditions.Terminating, *ep.Zone)
}

// sliceShows waits until the Service has one slice listing exactly want
// (endpointState strings) and returns it.
func (w *watched) sliceShows(t *testing.T, service string, want ...string) *discoveryv1.EndpointSlice {
	t.Helper()
	slices.Sort(want)
	var found *discoveryv1.EndpointSlice
	w.waitFor(t, fmt.Sprintf("one slice of %s with %v", service, want), func() (bool, string) {
		list := w.slicesOf(service)
		if len(list) != 1 {
			return false, fmt.Sprintf("%d slices", len(list))
		}
		var got []string
		for _, ep := range list[0].Endpoints {
			got = append(got, endpointState(ep))
		}
		slices.Sort(got)
		found = list[0]
		return slices.Equal(got, want), fmt.Sprintf("%v", got)
	})
	return found
}

func setPodStatus(t *testing.T, client kubernetes.Interface, name, ip string, ready bool) {
	t.Helper()
	pod, err := client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP = ip
	pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
	if _, err := client.CoreV1().Pods(ns).UpdateStatus(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status of pod %s: %v", name, err)
	}
}

func createPod(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			NodeName: "node-1",
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}},
		},
	}
	if _, err := client.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
}

func TestEndpointSlicesAgainstAPIServer(t *testing.T) {
	client, w := startControllers(t)
	ctx := context.Background()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
		},
	}
	svc, err := client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	placeholder := w.sliceShows(t, "web")

	createPod(t, client, "web-1")
	createPod(t, client, "web-2")
	setPodStatus(t, client, "web-1", "10.244.1.2", true)
	setPodStatus(t, client, "web-2", "10.244.1.3", false)

	var first *discoveryv1.EndpointSlice
	t.Run("slice lists pods with conditions, zone and ports", func(t *testing.T) {
		first = w.sliceShows(t, "web", "web-1:true/true/false@zone-a", "web-2:false/false/false@zone-a")
		if first.Name != placeholder.Name {
			t.Errorf("slice %s replaced the placeholder %s; want it updated in place", first.Name, placeholder.Name)
		}
		if first.GenerateName != "web-" || first.Labels[discoveryv1.LabelManagedBy] != "endpointslice-controller.k8s.io" {
			t.Errorf("slice generateName %q labels %v", first.GenerateName, first.Labels)
		}
		if len(first.OwnerReferences) != 1 || first.OwnerReferences[0].UID != svc.UID {
			t.Errorf("slice owners %v; want the Service", first.OwnerReferences)
		}
		if len(first.Ports) != 1 || *first.Ports[0].Port != 8080 || first.AddressType != discoveryv1.AddressTypeIPv4 {
			t.Errorf("slice ports %v address type %s; want 8080, IPv4", first.Ports, first.AddressType)
		}
	})
	t.Run("readiness change updates the same slice", func(t *testing.T) {
		setPodStatus(t, client, "web-2", "10.244.1.3", true)
		s := w.sliceShows(t, "web", "web-1:true/true/false@zone-a", "web-2:true/true/false@zone-a")
		if s.Name != first.Name {
			t.Errorf("slice %s replaced %s; want an update in place", s.Name, first.Name)
		}
	})
	t.Run("terminating pod stays, terminating and not ready", func(t *testing.T) {
		// The pod is on a node, so the API server only marks it deleted.
		if err := client.CoreV1().Pods(ns).Delete(ctx, "web-1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		w.sliceShows(t, "web", "web-1:false/true/true@zone-a", "web-2:true/true/false@zone-a")
	})
	t.Run("deleting the service lets the garbage collector delete its slices", func(t *testing.T) {
		if err := client.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		w.waitFor(t, "no slices of web", func() (bool, string) {
			n := len(w.slicesOf("web"))
			return n == 0, fmt.Sprintf("%d slices", n)
		})
	})
}
