package kubelet

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/kubelet/cri/critest"
)

// fixture is a kubelet on a fake clientset, a fake clock and the
// in-memory runtime; tests drive its syncs by hand.
type fixture struct {
	t      *testing.T
	clock  *clocktesting.FakeClock
	client *fake.Clientset
	rt     *critest.Runtime
	k      *Kubelet
	events *record.FakeRecorder
}

var fixtureStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newFixture(t *testing.T, opts critest.Options) *fixture {
	t.Helper()
	clk := clocktesting.NewFakeClock(fixtureStart)
	opts.Now, opts.RecordCalls = clk.Now, true
	if opts.Images == nil {
		opts.Images = []string{appImage}
	}
	rt := critest.New(opts)
	client := fake.NewClientset()
	cfg := Config{
		NodeName: testNode, REST: &rest.Config{Host: "https://127.0.0.1:1"}, Runtime: rt, TLS: &tls.Config{},
		NodeIP:   "10.0.0.1",
		Capacity: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi")},
	}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	k := newKubelet(cfg, client, clk)
	go k.services.Run(k.ctx.Done())
	if !cache.WaitForCacheSync(k.ctx.Done(), k.services.HasSynced) {
		t.Fatal("service informer did not sync")
	}
	events := record.NewFakeRecorder(1000)
	k.rec.events = events
	t.Cleanup(func() {
		k.cancel()
		k.probes.stopAll()
	})
	return &fixture{t: t, clock: clk, client: client, rt: rt, k: k, events: events}
}

// testPod is a pod of node-1 with one container "app".
func testPod(name, image string, mutate func(*v1.Pod)) *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid"), ResourceVersion: "1"},
		Spec: v1.PodSpec{
			NodeName: testNode, RestartPolicy: v1.RestartPolicyAlways,
			Containers: []v1.Container{{Name: "app", Image: image, ImagePullPolicy: v1.PullIfNotPresent}},
		},
		Status: v1.PodStatus{Phase: v1.PodPending, QOSClass: v1.PodQOSBestEffort},
	}
	if mutate != nil {
		mutate(pod)
	}
	return pod
}

// create stores a pod in the fake API.
func (fx *fixture) create(pod *v1.Pod) *v1.Pod {
	fx.t.Helper()
	created, err := fx.client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		fx.t.Fatal(err)
	}
	return created
}

// get reads a pod back from the fake API.
func (fx *fixture) get(pod *v1.Pod) *v1.Pod {
	fx.t.Helper()
	got, err := fx.client.CoreV1().Pods(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		fx.t.Fatal(err)
	}
	return got
}

// sync runs one sync of the pod as the API has it now.
func (fx *fixture) sync(w *podWorker, pod *v1.Pod) syncResult {
	fx.t.Helper()
	res, err := fx.k.syncPod(context.Background(), w, fx.get(pod))
	if err != nil {
		fx.t.Fatalf("sync: %v", err)
	}
	return res
}

// container returns the app container's status as the API has it.
func (fx *fixture) container(pod *v1.Pod) v1.ContainerStatus {
	fx.t.Helper()
	st := fx.get(pod).Status.ContainerStatuses
	if len(st) != 1 {
		fx.t.Fatalf("container statuses: %+v", st)
	}
	return st[0]
}

// latest is the runtime's newest container of the pod's app container.
func (fx *fixture) latest(pod *v1.Pod) cri.ContainerStatus {
	fx.t.Helper()
	c, ok := fx.rt.Find(string(pod.UID), "app")
	if !ok {
		fx.t.Fatal("no app container in the runtime")
	}
	return c
}

// drain returns the events recorded so far ("Type Reason Message").
func (fx *fixture) drain() []string {
	var out []string
	for {
		select {
		case e := <-fx.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func hasEvent(events []string, prefix string) bool {
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}
