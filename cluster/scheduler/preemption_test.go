package scheduler

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/scheduler/plugins"
)

// TestPreemptionAgainstAPIServer: on a full node, a pod of a higher
// PriorityClass evicts the lowest pods that make it fit (and no more),
// is nominated to the node, and binds there once they are gone; the
// victims get the DisruptionTarget condition and upstream's Preempted
// event. A pod whose class says Never waits instead, and so does a pod
// that only equals the others' priority.
func TestPreemptionAgainstAPIServer(t *testing.T) {
	c := apiservertest.New(t, apiservertest.Options{})
	cs := c.Client()
	ctx := context.Background()
	for name, spec := range map[string]struct {
		value  int32
		policy v1.PreemptionPolicy
	}{"low": {10, v1.PreemptLowerPriority}, "mid": {50, v1.PreemptLowerPriority}, "high": {100, v1.PreemptLowerPriority}, "polite": {100, v1.PreemptNever}} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: spec.value, PreemptionPolicy: ptr.To(spec.policy)}
		if _, err := cs.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createNode(t, cs, "worker-1", "4", nil)
	startScheduler(t, c, "master-1", func(cfg *Config) {
		cfg.DisableLeaderElection = true
		cfg.Profile = plugins.Default()
	})
	withClass := func(name, cpu, class string) *v1.Pod {
		p := testPod(name, cpu)
		p.Spec.PriorityClassName = class
		return p
	}
	// The node is full: 1 + 1 cpu of low, 2 of mid.
	for _, p := range []*v1.Pod{withClass("low-a", "1", "low"), withClass("low-b", "1", "low"), withClass("mid", "2", "mid")} {
		createPod(t, cs, p)
		waitForPod(t, cs, "default", p.Name, "bound", bound)
	}

	// Equal priority and a Never policy: no victims.
	createPod(t, cs, withClass("peer", "1", "low"))
	createPod(t, cs, withClass("polite", "1", "polite"))
	// Each says why in upstream's words: the filters, then preemption.
	for name, want := range map[string]string{
		"peer":   "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
		"polite": "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.",
	} {
		got := waitForPod(t, cs, "default", name, "unschedulable", func(p *v1.Pod) bool {
			c := podCondition(p, v1.PodScheduled)
			return c != nil && c.Status == v1.ConditionFalse
		})
		if got.Status.NominatedNodeName != "" {
			t.Errorf("%s nominated to %s; it may not preempt", name, got.Status.NominatedNodeName)
		}
		if c := podCondition(got, v1.PodScheduled); c.Message != want {
			t.Errorf("%s PodScheduled message\n %q\nwant\n %q", name, c.Message, want)
		}
	}
	if err := cs.CoreV1().Pods("default").Delete(ctx, "peer", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods("default").Delete(ctx, "polite", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}

	// 2 cpu of high: taking both low pods suffices, mid stays.
	createPod(t, cs, withClass("urgent", "2", "high"))
	got := waitForPod(t, cs, "default", "urgent", "nominated", func(p *v1.Pod) bool { return p.Status.NominatedNodeName != "" })
	if got.Status.NominatedNodeName != "worker-1" {
		t.Errorf("nominated to %q, want worker-1", got.Status.NominatedNodeName)
	}
	for _, name := range []string{"low-a", "low-b"} {
		victim := waitForPod(t, cs, "default", name, "being deleted", func(p *v1.Pod) bool { return p.DeletionTimestamp != nil })
		if c := podCondition(victim, v1.DisruptionTarget); c == nil || c.Status != v1.ConditionTrue || c.Reason != v1.PodReasonPreemptionByScheduler ||
			c.Message != "default-scheduler: preempting to accommodate a higher priority pod" {
			t.Errorf("%s DisruptionTarget = %+v", name, c)
		}
		ev := waitForEvent(t, cs, "default", name, "Preempted")
		if want := "Preempted by pod " + string(got.UID) + " on node worker-1"; ev.Note != want || ev.Type != v1.EventTypeNormal || ev.Related == nil || ev.Related.Name != "urgent" {
			t.Errorf("Preempted event: type %q note %q related %+v; want note %q", ev.Type, ev.Note, ev.Related, want)
		}
		// No kubelet here: finish the graceful deletion as one would.
		if err := cs.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
	}
	if mid, err := cs.CoreV1().Pods("default").Get(ctx, "mid", metav1.GetOptions{}); err != nil || mid.DeletionTimestamp != nil {
		t.Errorf("mid was preempted too (%v); two low pods were enough", err)
	}
	bound := waitForPod(t, cs, "default", "urgent", "bound", bound)
	if bound.Spec.NodeName != "worker-1" {
		t.Errorf("urgent bound to %s", bound.Spec.NodeName)
	}
}

// TestPreemptionHonoursPDBAgainstAPIServer: of two nodes where preemption
// would work, the one whose victim a PodDisruptionBudget protects loses,
// even though its victim has the lower priority, as upstream's
// pickOneNodeForPreemption counts budget violations first.
func TestPreemptionHonoursPDBAgainstAPIServer(t *testing.T) {
	c := apiservertest.New(t, apiservertest.Options{})
	cs := c.Client()
	ctx := context.Background()
	for name, value := range map[string]int32{"low": 10, "mid": 50, "high": 100} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		if _, err := cs.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The budget allows no disruption: its status starts at zero allowed,
	// and no disruption controller runs here to raise it.
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}},
	}
	if _, err := cs.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	startScheduler(t, c, "master-1", func(cfg *Config) {
		cfg.DisableLeaderElection = true
		cfg.Profile = plugins.Default()
	})
	withClass := func(name, cpu, class string, labels map[string]string) *v1.Pod {
		p := testPod(name, cpu)
		p.Spec.PriorityClassName = class
		p.Labels = labels
		return p
	}
	// worker-1 is filled by the guarded low pod, then worker-2 by a mid one.
	createNode(t, cs, "worker-1", "2", nil)
	guarded := withClass("guarded", "2", "low", map[string]string{"app": "guarded"})
	createPod(t, cs, guarded)
	waitForPod(t, cs, "default", "guarded", "bound", bound)
	createNode(t, cs, "worker-2", "2", nil)
	createPod(t, cs, withClass("free", "2", "mid", map[string]string{"app": "free"}))
	if p := waitForPod(t, cs, "default", "free", "bound", bound); p.Spec.NodeName != "worker-2" {
		t.Fatalf("free bound to %s, want worker-2", p.Spec.NodeName)
	}

	createPod(t, cs, withClass("urgent", "2", "high", nil))
	got := waitForPod(t, cs, "default", "urgent", "nominated", func(p *v1.Pod) bool { return p.Status.NominatedNodeName != "" })
	if got.Status.NominatedNodeName != "worker-2" {
		t.Errorf("nominated to %q, want worker-2: the budget protects worker-1's pod", got.Status.NominatedNodeName)
	}
	waitForPod(t, cs, "default", "free", "being deleted", func(p *v1.Pod) bool { return p.DeletionTimestamp != nil })
	if p, err := cs.CoreV1().Pods("default").Get(ctx, "guarded", metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Errorf("the guarded pod was preempted (%v)", err)
	}
}
