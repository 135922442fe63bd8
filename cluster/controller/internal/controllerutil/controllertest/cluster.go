package controllertest

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/internal/componentbase"
)

// Namespace is where Cluster puts the test's objects.
const Namespace = "lab"

// Cluster is a real API server (over real etcd) with controllers
// running against it as system:kube-controller-manager. There are no
// kubelets and no scheduler: a test plays them, binding pods and writing
// their status.
type Cluster struct {
	// Client is an admin client for the test's own reads and writes.
	Client kubernetes.Interface
	// changed is poked whenever a watched object changes.
	changed chan struct{}
}

// StartCluster starts the API server, creates Namespace with the
// "default" ServiceAccount pods need, builds the controllers with inits
// (sharing one informer factory, as in the manager) and runs each with two
// workers until the test ends.
func StartCluster(t *testing.T, inits ...controllerctx.InitFunc) *Cluster {
	t.Helper()
	api := apiservertest.New(t, apiservertest.Options{})
	c := &Cluster{Client: api.Client(), changed: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	client, err := kubernetes.NewForConfig(api.Config(0, auth.KubeControllerManager))
	if err != nil {
		t.Fatal(err)
	}
	c.createNamespace(ctx, t)

	// Events go to the API server as kube-controller-manager sends them.
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	t.Cleanup(broadcaster.Shutdown)
	factory := informers.NewSharedInformerFactory(client, 0)
	cc := controllerctx.Context{
		Client:    client,
		Informers: factory,
		Recorder: func(component string) record.EventRecorder {
			return broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
		},
		Speed:  1,
		Logger: componentbase.Logger(nil),
	}
	var ctrls []controllerctx.Controller
	for _, init := range inits {
		ctrl, err := init(ctx, cc)
		if err != nil {
			t.Fatalf("init controller: %v", err)
		}
		ctrls = append(ctrls, ctrl)
	}
	// Wake waiters on any change of the objects workload tests look at.
	poke := func() {
		select {
		case c.changed <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}
	for _, inf := range []cache.SharedIndexInformer{
		factory.Core().V1().Pods().Informer(),
		factory.Apps().V1().ReplicaSets().Informer(),
		factory.Apps().V1().Deployments().Informer(),
		factory.Apps().V1().DaemonSets().Informer(),
		factory.Apps().V1().StatefulSets().Informer(),
		factory.Batch().V1().Jobs().Informer(),
		factory.Batch().V1().CronJobs().Informer(),
		factory.Policy().V1().PodDisruptionBudgets().Informer(),
		factory.Core().V1().Events().Informer(),
		factory.Core().V1().ResourceQuotas().Informer(),
	} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			t.Fatal(err)
		}
	}
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	for _, ctrl := range ctrls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctrl.Run(ctx, 2)
		}()
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		factory.Shutdown()
	})
	return c
}

func (c *Cluster) createNamespace(ctx context.Context, t *testing.T) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: Namespace}}
	if _, err := c.Client.CoreV1().ServiceAccounts(Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create service account: %v", err)
	}
}

// WaitFor re-evaluates cond each time a watched object changes until it
// holds; after timeout the test fails with cond's last description.
// There is no polling: every state cond can see arrives as a watch event.
func (c *Cluster) WaitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		ok, state := cond()
		if ok {
			return
		}
		select {
		case <-c.changed:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s: %s", what, state)
		}
	}
}

// Pods lists the test namespace's pods.
func (c *Cluster) Pods(t *testing.T) []corev1.Pod {
	t.Helper()
	list, err := c.Client.CoreV1().Pods(Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	return list.Items
}

// MarkRunning plays the kubelet: the pod is Running, and Ready (since now)
// when ready is true.
func (c *Cluster) MarkRunning(t *testing.T, pod *corev1.Pod, ready bool) {
	t.Helper()
	pod = pod.DeepCopy()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
	c.UpdatePodStatus(t, pod)
}

// UpdatePodStatus writes pod's status as a kubelet would.
func (c *Cluster) UpdatePodStatus(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if _, err := c.Client.CoreV1().Pods(Namespace).UpdateStatus(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status of pod %s: %v", pod.Name, err)
	}
}

// Events returns "Reason Message" of the test namespace's events about the
// object named involved.
func (c *Cluster) Events(t *testing.T, involved string) []string {
	t.Helper()
	list, err := c.Client.CoreV1().Events(Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == involved {
			out = append(out, e.Reason+" "+e.Message)
		}
	}
	return out
}

// Create calls create (a typed client's Create method) with obj and
// fails the test on error.
func Create[T runtime.Object](t *testing.T, create func(context.Context, T, metav1.CreateOptions) (T, error), obj T) T {
	t.Helper()
	out, err := create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %T: %v", obj, err)
	}
	return out
}

// ReadyAll plays the kubelets of a cluster without nodes: every pod not
// yet Ready and not being deleted becomes Running and Ready. Call it from
// a WaitFor condition, so that new pods become ready as they appear.
func (c *Cluster) ReadyAll(t *testing.T) {
	t.Helper()
	for _, p := range c.Pods(t) {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodRunning {
			continue
		}
		c.MarkRunning(t, &p, true)
	}
}

// FinishTerminating plays the kubelets for pods being deleted: each one
// is removed at once (grace period 0), as a kubelet does once its
// containers stopped.
func (c *Cluster) FinishTerminating(t *testing.T) {
	t.Helper()
	for _, p := range c.Pods(t) {
		if p.DeletionTimestamp == nil {
			continue
		}
		err := c.Client.CoreV1().Pods(Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("finish deleting pod %s: %v", p.Name, err)
		}
	}
}
