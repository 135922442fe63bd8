package endpoints_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/controller/endpoints"
)

const ns = "lab"

// startController runs the endpoints controller against a real API server
// as system:kube-controller-manager, and returns an admin client and an
// informer cache of the namespace's Endpoints whose changes wake waiters.
func startController(t *testing.T) (kubernetes.Interface, *watched) {
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
	client, err := kubernetes.NewForConfig(api.Config(0, auth.KubeControllerManager))
	if err != nil {
		t.Fatal(err)
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	factory := informers.NewSharedInformerFactory(client, 0)
	ctrl, err := endpoints.Init(ctx, controllerctx.Context{
		Client:    client,
		Informers: factory,
		Recorder: func(component string) record.EventRecorder {
			return broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	w := &watched{changed: make(chan struct{}, 1), informer: factory.Core().V1().Endpoints().Informer()}
	w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { w.poke() }, UpdateFunc: func(any, any) { w.poke() }, DeleteFunc: func(any) { w.poke() },
	})
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Go(func() { ctrl.Run(ctx, 2) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		factory.Shutdown()
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

// endpointsShow waits until the Endpoints named name lists exactly the
// given ready and not-ready pods on port.
func (w *watched) endpointsShow(t *testing.T, name string, port int32, ready, notReady []string) {
	t.Helper()
	w.waitFor(t, fmt.Sprintf("endpoints %s ready=%v notReady=%v", name, ready, notReady), func() (bool, string) {
		obj, ok, _ := w.informer.GetStore().GetByKey(ns + "/" + name)
		if !ok {
			return false, "no endpoints"
		}
		ep := obj.(*corev1.Endpoints)
		var gotReady, gotNotReady []string
		var ports []int32
		for _, s := range ep.Subsets {
			for _, a := range s.Addresses {
				gotReady = append(gotReady, a.TargetRef.Name)
			}
			for _, a := range s.NotReadyAddresses {
				gotNotReady = append(gotNotReady, a.TargetRef.Name)
			}
			for _, p := range s.Ports {
				ports = append(ports, p.Port)
			}
		}
		slices.Sort(gotReady)
		slices.Sort(gotNotReady)
		wantPorts := []int32{port}
		if len(ready)+len(notReady) == 0 {
			wantPorts = nil // no addresses, no subsets
		}
		ok = slices.Equal(gotReady, ready) && slices.Equal(gotNotReady, notReady) &&
			slices.Equal(slices.Compact(ports), wantPorts) &&
			ep.Labels[endpoints.LabelManagedBy] == "endpoint-controller"
		return ok, fmt.Sprintf("ready=%v notReady=%v ports=%v labels=%v", gotReady, gotNotReady, ports, ep.Labels)
	})
}

// setPodStatus plays the kubelet: the pod runs with ip, ready or not.
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

func TestEndpointsAgainstAPIServer(t *testing.T) {
	client, w := startController(t)
	ctx := context.Background()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
		},
	}
	if _, err := client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.endpointsShow(t, "web", 8080, nil, nil)

	createPod(t, client, "web-1")
	createPod(t, client, "web-2")
	setPodStatus(t, client, "web-1", "10.244.1.2", true)
	setPodStatus(t, client, "web-2", "10.244.1.3", false)
	t.Run("ready and not-ready pods", func(t *testing.T) {
		w.endpointsShow(t, "web", 8080, []string{"web-1"}, []string{"web-2"})
	})
	t.Run("a pod turning ready moves to addresses", func(t *testing.T) {
		setPodStatus(t, client, "web-2", "10.244.1.3", true)
		w.endpointsShow(t, "web", 8080, []string{"web-1", "web-2"}, nil)
	})
	t.Run("a pod turning not ready moves to notReadyAddresses", func(t *testing.T) {
		setPodStatus(t, client, "web-1", "10.244.1.2", false)
		w.endpointsShow(t, "web", 8080, []string{"web-2"}, []string{"web-1"})
	})
	t.Run("a terminating pod leaves the endpoints", func(t *testing.T) {
		// The pod is on a node, so the API server only marks it deleted;
		// no kubelet runs here to finish the deletion.
		if err := client.CoreV1().Pods(ns).Delete(ctx, "web-2", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		w.endpointsShow(t, "web", 8080, nil, []string{"web-1"})
	})
	t.Run("a deleted service's endpoints are deleted", func(t *testing.T) {
		if err := client.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		w.waitFor(t, "endpoints web deleted", func() (bool, string) {
			_, ok, _ := w.informer.GetStore().GetByKey(ns + "/web")
			return !ok, "endpoints web still exists"
		})
	})
}
