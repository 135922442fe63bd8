package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/controller/nodelifecycle"
)

// kubelet plays a node's kubelet: it renews the node's Lease until
// stopped.
type kubelet struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func startKubelet(t *testing.T, client kubernetes.Interface, node string, every time.Duration) *kubelet {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	k := &kubelet{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(k.done)
		for {
			lease, err := client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, node, metav1.GetOptions{})
			if err == nil {
				now := metav1.NewMicroTime(time.Now())
				lease.Spec.RenewTime = &now
				_, _ = client.CoordinationV1().Leases(v1.NamespaceNodeLease).Update(ctx, lease, metav1.UpdateOptions{})
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(every):
			}
		}
	}()
	t.Cleanup(k.stop)
	return k
}

func (k *kubelet) stop() {
	k.cancel()
	<-k.done
}

// registerNode creates a Ready node and its Lease.
func registerNode(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	ctx := context.Background()
	node, err := client.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	postReady(t, client, node.Name)
	now := metav1.NewMicroTime(time.Now())
	holder, seconds := name, int32(40)
	lease := &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: v1.NamespaceNodeLease, Name: name},
		Spec:       coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, RenewTime: &now},
	}
	if _, err := client.CoordinationV1().Leases(v1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// postReady posts Ready=True with a fresh heartbeat, as a kubelet does.
func postReady(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	ctx := context.Background()
	node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	node.Status.Conditions = []v1.NodeCondition{
		{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: v1.NodeDiskPressure, Status: v1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: v1.NodePIDPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientPID", LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now},
	}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// runningPod creates a pod bound to node and reports it running and ready.
func runningPod(t *testing.T, client kubernetes.Interface, name, node string, tolerations ...v1.Toleration) {
	t.Helper()
	ctx := context.Background()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: v1.PodSpec{
			NodeName:    node,
			Containers:  []v1.Container{{Name: "app", Image: "klab/app"}},
			Tolerations: tolerations,
		},
	}
	pod, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = v1.PodRunning
	pod.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestNodeLifecycle stops renewing one of two nodes' Leases at speed 50
// (grace period 1 s): the node goes Unknown, gets the unreachable taint,
// its pods go not ready, the pod that tolerates the taint 25 s (0.5 s in
// the lab) is evicted, the one that tolerates it forever stays; when the
// node posts Ready again the taint goes.
func TestNodeLifecycle(t *testing.T) {
	c := apiservertest.New(t, apiservertest.Options{})
	client := c.Client()
	ctx := context.Background()
	registerNode(t, client, "n1")
	registerNode(t, client, "n2")
	n1 := startKubelet(t, client, "n1", 50*time.Millisecond)
	startKubelet(t, client, "n2", 50*time.Millisecond)
	runningPod(t, client, "short-toleration", "n1", v1.Toleration{
		Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(25)),
	})
	runningPod(t, client, "forever", "n1", v1.Toleration{Operator: v1.TolerationOpExists})

	m := startManager(t, c, "master-1", 50, nodelifecycle.Name, nodelifecycle.TaintEvictionName)
	waitEvent(t, m, 10*time.Second, "leading", kind(EventStartedLeading))
	// The first monitor pass has seen both nodes.
	waitEvent(t, m, 5*time.Second, "first monitor pass", func(e Event) bool { return e.Kind == nodelifecycle.TransitionZoneState && e.To == "Normal" })

	stopped := time.Now()
	n1.stop()
	unknown := waitEvent(t, m, 10*time.Second, "n1 Unknown", func(e Event) bool {
		return e.Kind == nodelifecycle.TransitionNodeReady && e.Node == "n1" && e.To == "Unknown"
	})
	if took := unknown.Time.Sub(stopped); took < time.Second {
		t.Errorf("n1 went Unknown %v after its last renewal, before the 1 s grace period", took)
	}
	tainted := waitEvent(t, m, 5*time.Second, "n1 tainted", func(e Event) bool {
		return e.Kind == nodelifecycle.TransitionTaintAdded && e.Node == "n1" && e.Taint == "node.kubernetes.io/unreachable:NoExecute"
	})
	evicted := waitEvent(t, m, 5*time.Second, "short-toleration evicted", func(e Event) bool {
		return e.Kind == nodelifecycle.TransitionPodEvicted && e.Pod == "default/short-toleration"
	})
	t.Logf("after the last lease renewal: Unknown %v, tainted %v, pod evicted %v",
		unknown.Time.Sub(stopped), tainted.Time.Sub(stopped), evicted.Time.Sub(stopped))

	node, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range node.Status.Conditions {
		if cond.Status != v1.ConditionUnknown || cond.Reason != "NodeStatusUnknown" || cond.Message != "Kubelet stopped posting node status." {
			t.Errorf("n1 %s = %s %s %q, want Unknown NodeStatusUnknown", cond.Type, cond.Status, cond.Reason, cond.Message)
		}
	}
	i := slices.IndexFunc(node.Spec.Taints, func(t v1.Taint) bool { return t.Key == v1.TaintNodeUnreachable && t.Effect == v1.TaintEffectNoExecute })
	if i < 0 || node.Spec.Taints[i].TimeAdded == nil {
		t.Errorf("n1 taints = %v, want unreachable:NoExecute with timeAdded", node.Spec.Taints)
	}
	n2, err := client.CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n2.Spec.Taints) != 0 {
		t.Errorf("n2, which renews its lease, got taints %v", n2.Spec.Taints)
	}
	gone, err := client.CoreV1().Pods("default").Get(ctx, "short-toleration", metav1.GetOptions{})
	if err == nil && gone.DeletionTimestamp == nil {
		t.Errorf("short-toleration not deleted")
	}
	kept, err := client.CoreV1().Pods("default").Get(ctx, "forever", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if kept.DeletionTimestamp != nil || kept.Status.Conditions[0].Status != v1.ConditionFalse {
		t.Errorf("forever: deletion %v, Ready %s; want kept and not ready", kept.DeletionTimestamp, kept.Status.Conditions[0].Status)
	}
	eventually(t, 5*time.Second, "TaintManagerEviction event recorded", func(ctx context.Context) (bool, error) {
		events, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(events.Items, func(e v1.Event) bool {
			return e.Reason == "TaintManagerEviction" && e.Message == "Marking for deletion Pod default/short-toleration" &&
				e.Source.Component == "taint-eviction-controller"
		}), nil
	})

	// The kubelet comes back.
	startKubelet(t, client, "n1", 50*time.Millisecond)
	postReady(t, client, "n1")
	waitEvent(t, m, 5*time.Second, "n1 untainted", func(e Event) bool {
		return e.Kind == nodelifecycle.TransitionTaintRemoved && e.Node == "n1" && e.Taint == "node.kubernetes.io/unreachable:NoExecute"
	})

	// The same story over HTTP, as the lab's observer reads it.
	streamed := readEvents(t, m, func(e Event) bool { return e.Kind == nodelifecycle.TransitionTaintRemoved })
	for _, want := range []string{nodelifecycle.TransitionNodeReady, nodelifecycle.TransitionTaintAdded, nodelifecycle.TransitionPodEvicted} {
		if !slices.ContainsFunc(streamed, func(e Event) bool { return e.Kind == want }) {
			t.Errorf("/debug/klab/events has no %s event", want)
		}
	}
}
