package scheduler

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/scheduler/framework"
	tp "github.com/klab-dev/klab/cluster/scheduler/internal/testplugins"
	"github.com/klab-dev/klab/cluster/timing"
)

// testSpeed makes the leader-election lease 3 s (the lab's floor), the
// first backoff 100 ms.
const testSpeed = timing.Speed(10)

// waitTimeout bounds every wait on the API server.
const waitTimeout = 20 * time.Second

// testProfile filters with a node selector and a resource fit, and scores
// free cpu: enough to place pods the way the real plugins would.
func testProfile() []framework.PluginSpec {
	return []framework.PluginSpec{tp.Spec(tp.NodeSelector{}, 0), tp.Spec(tp.Fit{}, 1)}
}

// startScheduler starts a scheduler as system:kube-scheduler; it is killed
// when the test ends if still running.
func startScheduler(t *testing.T, c *apiservertest.Cluster, identity string, tune func(*Config)) *Scheduler {
	t.Helper()
	cfg := Config{
		REST:        c.Config(0, auth.KubeScheduler),
		Identity:    identity,
		Profile:     testProfile(),
		Speed:       testSpeed,
		DebugListen: "127.0.0.1:0",
	}
	if tune != nil {
		tune(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	return s
}

func createNode(t *testing.T, cs kubernetes.Interface, name, cpu string, labels map[string]string) {
	t.Helper()
	if _, err := cs.CoreV1().Nodes().Create(context.Background(), testNode(name, cpu, labels), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createPod(t *testing.T, cs kubernetes.Interface, pod *v1.Pod) {
	t.Helper()
	pod = pod.DeepCopy()
	pod.UID = ""
	if _, err := cs.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitForObject watches objects of a resource in ns until one satisfies
// cond, and returns it.
func waitForObject[T runtime.Object](t *testing.T, lw toolscache.ListerWatcher, what string, cond func(T) bool) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var zero T
	ev, err := watchtools.UntilWithSync(ctx, lw, zero, nil, func(e watch.Event) (bool, error) {
		obj, ok := e.Object.(T)
		return ok && e.Type != watch.Deleted && cond(obj), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
	return ev.Object.(T)
}

// waitForPod waits until the named pod satisfies cond.
func waitForPod(t *testing.T, cs kubernetes.Interface, ns, name, what string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	lw := toolscache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", ns, fields.OneTermEqualSelector("metadata.name", name))
	return waitForObject(t, lw, fmt.Sprintf("pod %s/%s %s", ns, name, what), cond)
}

// waitForEvent waits for an events.k8s.io event about the named object
// with the reason, and returns it.
func waitForEvent(t *testing.T, cs kubernetes.Interface, ns, name, reason string) *eventsv1.Event {
	t.Helper()
	lw := toolscache.NewListWatchFromClient(cs.EventsV1().RESTClient(), "events", ns, fields.Everything())
	return waitForObject(t, lw, fmt.Sprintf("event %s about %s/%s", reason, ns, name), func(e *eventsv1.Event) bool {
		return e.Regarding.Name == name && e.Reason == reason
	})
}

// eventually polls cond every 10 ms until it holds. Only for what cannot
// be watched (a component's in-memory state).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func bound(p *v1.Pod) bool { return p.Spec.NodeName != "" }

func podCondition(p *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// streamEvents opens /debug/klab/events and returns a channel of its
// lines, decoded.
func streamEvents(t *testing.T, s *Scheduler) <-chan Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.Addr()+"/debug/klab/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan Event, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var e Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				return
			}
			out <- e
		}
	}()
	t.Cleanup(func() {
		cancel()
		resp.Body.Close()
		for range out {
		}
		<-done
	})
	return out
}
