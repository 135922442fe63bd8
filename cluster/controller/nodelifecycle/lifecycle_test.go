package nodelifecycle

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/klab-dev/klab/cluster/timing"
)

var (
	unreachableNoExecute = v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute}
	notReadyNoExecute    = v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoExecute}
)

// seen is what the controller remembers of a node before the pass.
type seen struct {
	probeAgo time.Duration
	// leaseRenewAgo, if set, is the renew time of the Lease it saw.
	leaseRenewAgo time.Duration
}

func newLifecycle(t *testing.T, f *fixture, speed timing.Speed) *Controller {
	t.Helper()
	c, err := newController(f.ctx(), f.client, f.factory.Core().V1().Nodes(), f.factory.Core().V1().Pods(),
		f.factory.Coordination().V1().Leases(), f.recorder, nil, speed, f.clock)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// remember makes the controller know the node as if a pass had seen it.
func remember(c *Controller, node *v1.Node, s seen) {
	h := &nodeHealth{status: node.Status.DeepCopy(), probeTimestamp: t0.Add(-s.probeAgo), readyTransitionTimestamp: t0.Add(-time.Hour)}
	if s.leaseRenewAgo > 0 {
		h.lease = newLease(node.Name, t0.Add(-s.leaseRenewAgo))
	}
	c.health.set(node.Name, h)
	c.knownNodes[node.Name] = node
	c.addTainterForNewZone(node)
	c.zoneStates[""] = stateNormal
}

// TestMonitorNodeHealth runs one monitor pass and one tainting pass and
// checks what they sent to the API server.
func TestMonitorNodeHealth(t *testing.T) {
	old := t0.Add(-time.Hour)
	healthy := newNode("n2", v1.ConditionTrue, t0.Add(-time.Second))
	cases := []struct {
		name   string
		nodes  []*v1.Node
		pods   []*v1.Pod
		leases []*coordv1.Lease
		// seen lists the nodes the controller knows already.
		seen            map[string]seen
		wantActions     []string
		wantEvents      []string
		wantTransitions []string
		wantReady       map[string]v1.ConditionStatus
		wantTaints      map[string][]string
	}{{
		name:  "silent node goes Unknown and its pods not ready",
		nodes: []*v1.Node{newNode("n1", v1.ConditionTrue, old), healthy},
		pods:  []*v1.Pod{newPod("p1", "n1", v1.ConditionTrue)},
		seen:  map[string]seen{"n1": {probeAgo: 51 * time.Second}, "n2": {probeAgo: time.Second}},
		wantActions: []string{
			"update nodes/status n1",
			"update pods/status default/p1",
		},
		wantEvents: []string{
			"Normal NodeNotReady Node n1 status is now: NodeNotReady",
			"Warning NodeNotReady Node is not ready",
		},
		wantTransitions: []string{"NodeReady n1 True->Unknown", "PodNotReady n1 default/p1"},
		wantReady:       map[string]v1.ConditionStatus{"n1": v1.ConditionUnknown, "n2": v1.ConditionTrue},
	}, {
		name:      "node within its grace period is left alone",
		nodes:     []*v1.Node{newNode("n1", v1.ConditionTrue, old), healthy},
		seen:      map[string]seen{"n1": {probeAgo: 49 * time.Second}, "n2": {probeAgo: time.Second}},
		wantReady: map[string]v1.ConditionStatus{"n1": v1.ConditionTrue},
	}, {
		name:        "renewed lease keeps a node with an old heartbeat ready",
		nodes:       []*v1.Node{newNode("n1", v1.ConditionTrue, old), healthy},
		leases:      []*coordv1.Lease{newLease("n1", t0.Add(-time.Second))},
		seen:        map[string]seen{"n1": {probeAgo: 51 * time.Second, leaseRenewAgo: 51 * time.Second}, "n2": {probeAgo: time.Second}},
		wantActions: nil,
		wantReady:   map[string]v1.ConditionStatus{"n1": v1.ConditionTrue},
	}, {
		name:            "Unknown node is tainted unreachable",
		nodes:           []*v1.Node{newNode("n1", v1.ConditionUnknown, old), healthy},
		seen:            map[string]seen{"n1": {probeAgo: 60 * time.Second}, "n2": {probeAgo: time.Second}},
		wantActions:     []string{"get nodes n1", "patch nodes n1"},
		wantTransitions: []string{"TaintAdded n1 node.kubernetes.io/unreachable:NoExecute"},
		wantTaints:      map[string][]string{"n1": {"node.kubernetes.io/unreachable:NoExecute"}},
	}, {
		name:            "node reporting NotReady is tainted not-ready",
		nodes:           []*v1.Node{newNode("n1", v1.ConditionFalse, t0.Add(-time.Second)), healthy},
		seen:            map[string]seen{"n1": {probeAgo: time.Second}, "n2": {probeAgo: time.Second}},
		wantActions:     []string{"get nodes n1", "patch nodes n1"},
		wantTransitions: []string{"TaintAdded n1 node.kubernetes.io/not-ready:NoExecute"},
		wantTaints:      map[string][]string{"n1": {"node.kubernetes.io/not-ready:NoExecute"}},
	}, {
		name:        "unreachable node reporting NotReady swaps its taint at once",
		nodes:       []*v1.Node{newNode("n1", v1.ConditionFalse, t0.Add(-time.Second), withTaints(unreachableNoExecute)), healthy},
		seen:        map[string]seen{"n1": {probeAgo: time.Second}, "n2": {probeAgo: time.Second}},
		wantActions: []string{"get nodes n1", "patch nodes n1", "get nodes n1", "patch nodes n1"},
		wantTransitions: []string{
			"TaintAdded n1 node.kubernetes.io/not-ready:NoExecute",
			"TaintRemoved n1 node.kubernetes.io/unreachable:NoExecute",
		},
		wantTaints: map[string][]string{"n1": {"node.kubernetes.io/not-ready:NoExecute"}},
	}, {
		name:            "ready node loses its NoExecute taint",
		nodes:           []*v1.Node{newNode("n1", v1.ConditionTrue, t0.Add(-time.Second), withTaints(unreachableNoExecute)), healthy},
		seen:            map[string]seen{"n1": {probeAgo: time.Second}, "n2": {probeAgo: time.Second}},
		wantActions:     []string{"get nodes n1", "patch nodes n1"},
		wantTransitions: []string{"TaintRemoved n1 node.kubernetes.io/unreachable:NoExecute"},
		wantTaints:      map[string][]string{"n1": nil},
	}, {
		name: "node that never posted status is Unknown after the startup grace period",
		nodes: []*v1.Node{
			func() *v1.Node {
				n := newNode("n1", v1.ConditionTrue, old)
				n.Status.Conditions = nil
				n.CreationTimestamp.Time = t0.Add(-61 * time.Second)
				return n
			}(),
			healthy,
		},
		seen: map[string]seen{"n2": {probeAgo: time.Second}},
		// It is queued for its taint at once (it was never ready), but
		// tainted only once the cache shows the Unknown condition.
		wantActions: []string{"update nodes/status n1"},
		wantEvents:  []string{"Normal RegisteredNode Node n1 event: Registered Node n1 in Controller"},
		wantReady:   map[string]v1.ConditionStatus{"n1": v1.ConditionUnknown},
		wantTaints:  map[string][]string{"n1": nil},
	}, {
		name: "every node down: master disruption mode removes the taints and taints nothing",
		nodes: []*v1.Node{
			newNode("n1", v1.ConditionUnknown, old, withTaints(unreachableNoExecute)),
			newNode("n2", v1.ConditionUnknown, old, withTaints(unreachableNoExecute)),
		},
		seen:        map[string]seen{"n1": {probeAgo: time.Minute}, "n2": {probeAgo: time.Minute}},
		wantActions: []string{"get nodes n1", "patch nodes n1", "get nodes n2", "patch nodes n2"},
		wantTransitions: []string{
			"TaintRemoved n1 node.kubernetes.io/unreachable:NoExecute",
			"TaintRemoved n2 node.kubernetes.io/unreachable:NoExecute",
			`ZoneState zone="" Normal->FullDisruption`,
		},
		wantTaints: map[string][]string{"n1": nil, "n2": nil},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var objects []runtime.Object
			for _, n := range tc.nodes {
				objects = append(objects, n)
			}
			for _, p := range tc.pods {
				objects = append(objects, p)
			}
			for _, l := range tc.leases {
				objects = append(objects, l)
			}
			f := newFixture(t, objects...)
			c := newLifecycle(t, f, 1)
			f.cache(objects...)
			for _, n := range tc.nodes {
				if s, ok := tc.seen[n.Name]; ok {
					remember(c, n, s)
				}
			}

			if err := c.monitorNodeHealth(f.ctx()); err != nil {
				t.Fatalf("monitorNodeHealth: %v", err)
			}
			c.doNoExecuteTaintingPass(f.ctx())

			if diff := cmp.Diff(tc.wantActions, f.actions()); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEvents, f.events()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTransitions, f.takeTransitions()); diff != "" {
				t.Errorf("transitions (-want +got):\n%s", diff)
			}
			for name, want := range tc.wantReady {
				if got := getNodeCondition(&f.node(name).Status, v1.NodeReady); got == nil || got.Status != want {
					t.Errorf("node %s Ready = %v, want %s", name, got, want)
				}
			}
			for name, want := range tc.wantTaints {
				if diff := cmp.Diff(want, taints(f.node(name))); diff != "" {
					t.Errorf("node %s taints (-want +got):\n%s", name, diff)
				}
			}
		})
	}
}

// TestSilentNodeConditions checks what a silent node's conditions say and
// that its pods' Ready condition turns False.
func TestSilentNodeConditions(t *testing.T) {
	node := newNode("n1", v1.ConditionTrue, t0.Add(-time.Hour))
	pod := newPod("p1", "n1", v1.ConditionTrue)
	f := newFixture(t, node, pod)
	c := newLifecycle(t, f, 1)
	f.cache(node, pod)
	remember(c, node, seen{probeAgo: time.Minute})
	if err := c.monitorNodeHealth(f.ctx()); err != nil {
		t.Fatal(err)
	}
	got := f.node("n1")
	for _, typ := range ownedConditions {
		cond := getNodeCondition(&got.Status, typ)
		if cond == nil {
			t.Fatalf("condition %s missing", typ)
		}
		if cond.Status != v1.ConditionUnknown || cond.Reason != "NodeStatusUnknown" || cond.Message != "Kubelet stopped posting node status." {
			t.Errorf("%s = %s %q %q, want Unknown NodeStatusUnknown %q", typ, cond.Status, cond.Reason, cond.Message, "Kubelet stopped posting node status.")
		}
		if !cond.LastTransitionTime.Time.Equal(t0) {
			t.Errorf("%s lastTransitionTime = %v, want %v", typ, cond.LastTransitionTime, t0)
		}
	}
	p, err := f.client.CoreV1().Pods("default").Get(f.ctx(), "p1", metav1GetOptions)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Status.Conditions) != 1 || p.Status.Conditions[0].Status != v1.ConditionFalse || !p.Status.Conditions[0].LastTransitionTime.Time.Equal(t0) {
		t.Errorf("pod conditions = %+v, want Ready False since %v", p.Status.Conditions, t0)
	}
}

// TestNodeGoesSilentAndComesBack follows one node through several passes:
// marked Unknown, tainted on the next pass (once the cache shows Unknown),
// then untainted when its kubelet posts Ready again.
func TestNodeGoesSilentAndComesBack(t *testing.T) {
	n1 := newNode("n1", v1.ConditionTrue, t0)
	n2 := newNode("n2", v1.ConditionTrue, t0)
	f := newFixture(t, n1, n2)
	c := newLifecycle(t, f, 10) // grace 5 s, monitor period 500 ms
	f.cache(n1, n2)
	pass := func() []string {
		t.Helper()
		if err := c.monitorNodeHealth(f.ctx()); err != nil {
			t.Fatal(err)
		}
		c.doNoExecuteTaintingPass(f.ctx())
		return f.actions()
	}
	heartbeat := func(name string, ready v1.ConditionStatus) {
		t.Helper()
		node := f.node(name)
		for i := range node.Status.Conditions {
			cond := &node.Status.Conditions[i]
			cond.LastHeartbeatTime.Time = f.clock.Now()
			if cond.Type == v1.NodeReady && cond.Status != ready {
				cond.Status, cond.LastTransitionTime.Time = ready, f.clock.Now()
			}
		}
		if _, err := f.client.CoreV1().Nodes().UpdateStatus(f.ctx(), node, metav1UpdateOptions); err != nil {
			t.Fatal(err)
		}
		f.recache(name)
		f.actions()
	}

	steps := []struct {
		name        string
		advance     time.Duration
		n2Heartbeat bool
		n1Ready     v1.ConditionStatus // n1 posts this if set
		want        []string
		wantTaints  []string
	}{
		{name: "first pass: both nodes registered", want: nil},
		{name: "4s later: still within the 5s grace", advance: 4 * time.Second, n2Heartbeat: true, want: nil},
		{name: "6s later: n1 marked Unknown", advance: 2 * time.Second, n2Heartbeat: true, want: []string{"update nodes/status n1"}},
		{name: "next pass: n1 tainted unreachable", advance: 500 * time.Millisecond, n2Heartbeat: true,
			want: []string{"get nodes n1", "patch nodes n1"}, wantTaints: []string{"node.kubernetes.io/unreachable:NoExecute"}},
		{name: "n1 posts Ready again: taint removed", advance: 500 * time.Millisecond, n2Heartbeat: true, n1Ready: v1.ConditionTrue,
			want: []string{"get nodes n1", "patch nodes n1"}},
	}
	for _, s := range steps {
		f.clock.Step(s.advance)
		if s.n2Heartbeat {
			heartbeat("n2", v1.ConditionTrue)
		}
		if s.n1Ready != "" {
			heartbeat("n1", s.n1Ready)
		}
		if diff := cmp.Diff(s.want, pass()); diff != "" {
			t.Fatalf("%s: actions (-want +got):\n%s", s.name, diff)
		}
		f.recache("n1")
		if diff := cmp.Diff(s.wantTaints, taints(f.node("n1"))); diff != "" {
			t.Fatalf("%s: taints (-want +got):\n%s", s.name, diff)
		}
	}
	want := []string{
		`ZoneState zone="" Initial->Normal`,
		"NodeReady n1 True->Unknown",
		"TaintAdded n1 node.kubernetes.io/unreachable:NoExecute",
		"NodeReady n1 Unknown->True",
		"TaintRemoved n1 node.kubernetes.io/unreachable:NoExecute",
	}
	if diff := cmp.Diff(want, f.takeTransitions()); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
	if taint := f.node("n1").Spec.Taints; len(taint) != 0 {
		t.Errorf("taints left: %v", taint)
	}
}

// TestTaintingIsRateLimited checks that nodes of one zone are tainted no
// faster than --node-eviction-rate (0.1 nodes/s) times the lab's speed.
func TestTaintingIsRateLimited(t *testing.T) {
	for _, tc := range []struct {
		name  string
		speed timing.Speed
		gap   time.Duration // between two taints
	}{
		{name: "real time: one node per 10s", speed: 1, gap: 10 * time.Second},
		{name: "speed 10: one node per second", speed: 10, gap: time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Two of three nodes down is still a Normal zone: not more
			// than two not ready.
			n1 := newNode("n1", v1.ConditionUnknown, t0.Add(-time.Hour))
			n2 := newNode("n2", v1.ConditionUnknown, t0.Add(-time.Hour))
			n3 := newNode("n3", v1.ConditionTrue, t0)
			f := newFixture(t, n1, n2, n3)
			c := newLifecycle(t, f, tc.speed)
			f.cache(n1, n2, n3)
			for _, n := range []*v1.Node{n1, n2, n3} {
				remember(c, n, seen{probeAgo: 0})
			}
			if err := c.monitorNodeHealth(f.ctx()); err != nil {
				t.Fatal(err)
			}
			c.doNoExecuteTaintingPass(f.ctx())
			if diff := cmp.Diff([]string{"get nodes n1", "patch nodes n1"}, f.actions()); diff != "" {
				t.Fatalf("first pass (-want +got):\n%s", diff)
			}
			f.clock.Step(tc.gap - tc.gap/10)
			c.doNoExecuteTaintingPass(f.ctx())
			if got := f.actions(); len(got) != 0 {
				t.Fatalf("before the gap: %v, want nothing", got)
			}
			f.clock.Step(tc.gap / 10)
			c.doNoExecuteTaintingPass(f.ctx())
			if diff := cmp.Diff([]string{"get nodes n2", "patch nodes n2"}, f.actions()); diff != "" {
				t.Fatalf("after the gap (-want +got):\n%s", diff)
			}
		})
	}
}
