package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/polymorphichelpers"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/internal/testenv"
)

// loopFixture is a running cluster with workers and an admin client.
type loopFixture struct {
	t      *testing.T
	name   string
	c      *Cluster
	client kubernetes.Interface
	ctx    context.Context
	// kubectlCache is kubectl's discovery cache directory.
	kubectlCache string
}

func startLoopCluster(t *testing.T, masters, workers int, speed float64) *loopFixture {
	t.Helper()
	testHome(t)
	suffix := make([]byte, 3)
	rand.Read(suffix)
	name := "loop-" + hex.EncodeToString(suffix)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	c, err := Up(ctx, Spec{Name: name, Masters: masters, Workers: workers, Speed: speed, Runtime: RuntimeLocal, NoFsync: true}, Options{})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background(), nil) })
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Info().Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &loopFixture{t: t, name: name, c: c, client: client, ctx: ctx}
}

// eventually polls cond every 100 ms until it holds or the timeout ends.
// The conditions read the API server's state, which several components
// change; a watch per condition would say the same at more length.
func (f *loopFixture) eventually(timeout time.Duration, what string, cond func() (bool, error)) {
	f.t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		lastErr = err
		time.Sleep(100 * time.Millisecond)
	}
	f.t.Fatalf("timed out after %v waiting for %s (last error: %v)", timeout, what, lastErr)
}

func (f *loopFixture) pods(selector string) []corev1.Pod {
	list, err := f.client.CoreV1().Pods("default").List(f.ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		f.t.Fatal(err)
	}
	return list.Items
}

func podRunningReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitRunning waits until exactly n pods matching selector are Running and
// Ready, and returns them.
func (f *loopFixture) waitRunning(selector string, n int, timeout time.Duration) []corev1.Pod {
	f.t.Helper()
	var ready []corev1.Pod
	f.eventually(timeout, fmt.Sprintf("%d running pods %s", n, selector), func() (bool, error) {
		ready = ready[:0]
		all := f.pods(selector)
		for i := range all {
			if podRunningReady(&all[i]) {
				ready = append(ready, all[i])
			}
		}
		return len(ready) == n && len(all) == n, fmt.Errorf("%d of %d ready", len(ready), len(all))
	})
	return ready
}

func deployment(name string, replicas int32, image string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: image,
					Ports:          []corev1.ContainerPort{{ContainerPort: 8080}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1},
				}}},
			},
		},
	}
}

// TestControlLoop runs the control loop's story on one cluster of three
// masters and three workers at speed 10: a Deployment spread over the
// workers and reachable at its pods' IPs, healed, scaled, rolled out and
// rolled back; pods that cannot fit stay Pending with the scheduler's
// message; a worker that dies goes NotReady and its pods move; the
// scheduler's leader dies and another takes over.
func TestControlLoop(t *testing.T) {
	testenv.EndToEnd(t)
	f := startLoopCluster(t, 3, 3, 10)
	ctx, client := f.ctx, f.client
	deploys := client.AppsV1().Deployments("default")

	// The control plane shows as mirror pods.
	f.eventually(30*time.Second, "mirror pods of the control plane", func() (bool, error) {
		list, err := client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		want := map[string]bool{}
		for i := 1; i <= 3; i++ {
			for _, comp := range []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"} {
				want[fmt.Sprintf("%s-master-%d", comp, i)] = true
			}
		}
		for _, p := range list.Items {
			if podRunningReady(&p) {
				delete(want, p.Name)
			}
		}
		return len(want) == 0, fmt.Errorf("not yet running: %v", want)
	})

	// Every node Ready: a worker whose kubelet is slow to report (a busy
	// machine) still carries the not-ready taint, and the scheduler rightly
	// sends its share of the pods elsewhere.
	f.eventually(60*time.Second, "six nodes Ready and untainted", func() (bool, error) {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		ready := 0
		for _, n := range list.Items {
			tainted := false
			for _, taint := range n.Spec.Taints {
				tainted = tainted || strings.HasPrefix(taint.Key, "node.kubernetes.io/")
			}
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && !tainted {
					ready++
				}
			}
		}
		return ready == 6, fmt.Errorf("%d of 6 nodes Ready and untainted", ready)
	})

	// Six replicas spread over the three workers, none on a master.
	if _, err := deploys.Create(ctx, deployment("web", 6, "klab/app:v1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := f.waitRunning("app=web", 6, 30*time.Second)
	perNode := map[string]int{}
	for _, p := range pods {
		perNode[p.Spec.NodeName]++
		if p.Status.PodIP == "" {
			t.Errorf("pod %s has no IP", p.Name)
		}
	}
	for i := 1; i <= 3; i++ {
		if n := perNode[fmt.Sprintf("worker-%d", i)]; n != 2 {
			t.Errorf("worker-%d runs %d pods, want 2 (spread: %v)", i, n, perNode)
		}
	}

	// A request to a pod's IP reaches that pod.
	resp, err := http.Get("http://" + pods[0].Status.PodIP + ":8080/")
	if err != nil {
		t.Fatalf("GET pod %s: %v", pods[0].Name, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), pods[0].Name) {
		t.Errorf("pod %s answered %q, which does not name it", pods[0].Name, body)
	}

	// A deleted pod is replaced.
	if err := client.CoreV1().Pods("default").Delete(ctx, pods[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually(30*time.Second, "a replacement pod", func() (bool, error) {
		for _, p := range f.pods("app=web") {
			if p.Name == pods[0].Name {
				return false, nil
			}
		}
		return true, nil
	})
	f.waitRunning("app=web", 6, 30*time.Second)

	// Scale down and up.
	scale := func(n int32) {
		// kubectl scale reads the scale and writes it back, retrying
		// when a controller's status write got in between.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s, err := deploys.GetScale(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			s.Spec.Replicas = n
			_, err = deploys.UpdateScale(ctx, "web", s, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		f.waitRunning("app=web", int(n), 30*time.Second)
	}
	scale(3)
	scale(6)

	// A rolling update to a new tag completes; undo brings the old one
	// back, as kubectl rollout undo does it.
	rollTo := func(image string) {
		f.eventually(60*time.Second, "rollout to "+image, func() (bool, error) {
			d, err := deploys.Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			done := d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == 6 && d.Status.Replicas == 6 && d.Status.AvailableReplicas == 6
			if !done {
				return false, fmt.Errorf("status %+v", d.Status)
			}
			for _, p := range f.pods("app=web") {
				if p.Spec.Containers[0].Image != image || !podRunningReady(&p) {
					return false, fmt.Errorf("pod %s runs %s", p.Name, p.Spec.Containers[0].Image)
				}
			}
			return true, nil
		})
	}
	// As kubectl set image does it: a patch, which does not race the
	// controllers' status writes the way a read-modify-write would.
	patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"klab/app:v2"}]}}}}`)
	if _, err := deploys.Patch(ctx, "web", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	rollTo("klab/app:v2")
	rollbacker, err := polymorphichelpers.RollbackerFor(schema.GroupKind{Group: "apps", Kind: "Deployment"}, client)
	if err != nil {
		t.Fatal(err)
	}
	d, err := deploys.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rollbacker.Rollback(d, nil, 0, cmdutil.DryRunNone); err != nil {
		t.Fatalf("rollout undo: %v", err)
	}
	rollTo("klab/app:v1")

	t.Run("pending until it fits", func(t *testing.T) { testPending(f) })
	t.Run("probes", func(t *testing.T) { testProbes(f) })
	t.Run("node failure", func(t *testing.T) { testNodeFailure(f) })
	t.Run("scheduler failover", func(t *testing.T) { testSchedulerFailover(f) })
}

func singlePod(name string, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"test": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "klab/app:v1"}}},
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func (f *loopFixture) waitUnschedulable(name, wantInMessage string) {
	f.t.Helper()
	f.eventually(30*time.Second, name+" marked unschedulable", func() (bool, error) {
		p, err := f.client.CoreV1().Pods("default").Get(f.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				if !strings.HasPrefix(c.Message, "0/6 nodes are available: ") || !strings.Contains(c.Message, wantInMessage) {
					f.t.Fatalf("unschedulable message %q lacks %q", c.Message, wantInMessage)
				}
				return true, nil
			}
		}
		return false, fmt.Errorf("conditions %+v", p.Status.Conditions)
	})
}

func testPending(f *loopFixture) {
	pods := f.client.CoreV1().Pods("default")
	big := singlePod("big", func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16")}
	})
	if _, err := pods.Create(f.ctx, big, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.waitUnschedulable("big", "3 Insufficient cpu")

	picky := singlePod("picky", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} })
	if _, err := pods.Create(f.ctx, picky, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.waitUnschedulable("picky", "3 node(s) didn't match Pod's node affinity/selector")

	// Labelling a node lets the pod in (a patch, as kubectl label sends:
	// the kubelet writes the node's status meanwhile).
	label := []byte(`{"metadata":{"labels":{"disk":"ssd"}}}`)
	if _, err := f.client.CoreV1().Nodes().Patch(f.ctx, "worker-2", types.StrategicMergePatchType, label, metav1.PatchOptions{}); err != nil {
		f.t.Fatal(err)
	}
	got := f.waitRunning("test=picky", 1, 30*time.Second)
	if got[0].Spec.NodeName != "worker-2" {
		f.t.Errorf("picky landed on %s, want worker-2", got[0].Spec.NodeName)
	}
	for _, name := range []string{"big", "picky"} {
		pods.Delete(f.ctx, name, metav1.DeleteOptions{})
	}
}

func nodeCondition(n *corev1.Node, t corev1.NodeConditionType) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// testNodeFailure kills worker-1: at speed 10 the node goes Unknown after
// the 5 s grace period, its pods are evicted 30 s after the taint (300 s of
// toleration / 10) and run elsewhere; restarted, it comes back Ready and
// untainted.
func testNodeFailure(f *loopFixture) {
	nodes := f.client.CoreV1().Nodes()
	killed := time.Now()
	if _, err := f.c.Chaos(f.ctx, ChaosRequest{Op: OpKill, Targets: []string{"worker-1"}}); err != nil {
		f.t.Fatal(err)
	}
	f.eventually(20*time.Second, "worker-1 NotReady and tainted unreachable", func() (bool, error) {
		n, err := nodes.Get(f.ctx, "worker-1", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return nodeCondition(n, corev1.NodeReady) == corev1.ConditionUnknown && hasTaint(n, corev1.TaintNodeUnreachable), nil
	})
	notReadyAfter := time.Since(killed)
	if notReadyAfter < 3*time.Second {
		f.t.Errorf("worker-1 went NotReady %v after the kill, before its 5 s grace period", notReadyAfter)
	}
	f.eventually(90*time.Second, "web's pods running elsewhere", func() (bool, error) {
		running := 0
		for _, p := range f.pods("app=web") {
			if p.Spec.NodeName != "worker-1" && podRunningReady(&p) {
				running++
			}
		}
		return running == 6, fmt.Errorf("%d of 6 running off worker-1", running)
	})
	if movedAfter := time.Since(killed); movedAfter < notReadyAfter+20*time.Second {
		f.t.Errorf("pods moved %v after the kill: sooner than the 30 s toleration allows", movedAfter)
	}
	if _, err := f.c.Chaos(f.ctx, ChaosRequest{Op: OpRestart, Targets: []string{"worker-1"}}); err != nil {
		f.t.Fatal(err)
	}
	f.eventually(30*time.Second, "worker-1 Ready and untainted", func() (bool, error) {
		n, err := nodes.Get(f.ctx, "worker-1", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return nodeCondition(n, corev1.NodeReady) == corev1.ConditionTrue && !hasTaint(n, corev1.TaintNodeUnreachable) && !hasTaint(n, corev1.TaintNodeNotReady), nil
	})
	// Its kubelet finishes the deletions that waited for it.
	f.waitRunning("app=web", 6, 30*time.Second)
}

// testSchedulerFailover kills the scheduler that holds the lease, named as
// a student names it, leader/kube-scheduler; another master's scheduler
// takes over and schedules new pods.
func testSchedulerFailover(f *loopFixture) {
	leases := f.client.CoordinationV1().Leases("kube-system")
	holder := func() string {
		l, err := leases.Get(f.ctx, "kube-scheduler", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		node, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
		return node
	}
	old := holder()
	if !strings.HasPrefix(old, "master-") {
		f.t.Fatalf("scheduler lease holder = %q, want a master", old)
	}
	// Named by what it is, not where it runs: klab finds the holder.
	res, err := f.c.Chaos(f.ctx, ChaosRequest{Op: OpKill, Targets: []string{"leader/kube-scheduler"}})
	if err != nil {
		f.t.Fatal(err)
	}
	if want := (Target{Node: old, Component: "kube-scheduler", Leader: true}); len(res.Targets) != 1 || res.Targets[0] != want {
		f.t.Fatalf("leader/kube-scheduler resolved to %+v, want %+v", res.Targets, want)
	}
	f.eventually(30*time.Second, "a new scheduler leader", func() (bool, error) {
		h := holder()
		return h != "" && h != old, fmt.Errorf("holder %q", h)
	})
	if _, err := f.client.CoreV1().Pods("default").Create(f.ctx, singlePod("after-failover", nil), metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.waitRunning("test=after-failover", 1, 30*time.Second)
}

// testProbes: a failing liveness probe restarts the container (RESTARTS
// grows); a failing readiness probe takes the pod out of its Service's
// endpoints until it recovers.
func testProbes(f *loopFixture) {
	pods := f.client.CoreV1().Pods("default")
	sick := singlePod("sick", func(p *corev1.Pod) {
		c := &p.Spec.Containers[0]
		c.Env = []corev1.EnvVar{{Name: "FAIL_LIVENESS_AFTER", Value: "1"}}
		c.LivenessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 1, FailureThreshold: 1,
		}
	})
	if _, err := pods.Create(f.ctx, sick, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.eventually(60*time.Second, "sick restarted by its liveness probe", func() (bool, error) {
		p, err := pods.Get(f.ctx, "sick", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount >= 2 {
				return true, nil
			}
		}
		return false, fmt.Errorf("statuses %+v", p.Status.ContainerStatuses)
	})
	pods.Delete(f.ctx, "sick", metav1.DeleteOptions{})

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	if _, err := f.client.CoreV1().Services("default").Create(f.ctx, svc, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	endpoints := func(ready, notReady int) func() (bool, error) {
		return func() (bool, error) {
			ep, err := f.client.CoreV1().Endpoints("default").Get(f.ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			r, n := 0, 0
			for _, s := range ep.Subsets {
				r += len(s.Addresses)
				n += len(s.NotReadyAddresses)
			}
			return r == ready && n == notReady, fmt.Errorf("%d ready, %d not ready", r, n)
		}
	}
	f.eventually(30*time.Second, "six ready endpoints", endpoints(6, 0))
	victim := f.waitRunning("app=web", 6, 30*time.Second)[0]
	post := func(path string) {
		resp, err := http.Post("http://"+victim.Status.PodIP+":8080"+path, "text/plain", nil)
		if err != nil {
			f.t.Fatal(err)
		}
		resp.Body.Close()
	}
	post("/fail")
	f.eventually(30*time.Second, "the failing pod out of the ready endpoints", endpoints(5, 1))
	post("/recover")
	f.eventually(30*time.Second, "the pod back in the endpoints", endpoints(6, 0))
}
