package nodelifecycle

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

// TestNoScheduleTaints checks that NoSchedule taints follow conditions and
// spec.unschedulable, leaving other taints alone.
func TestNoScheduleTaints(t *testing.T) {
	userTaint := v1.Taint{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule}
	cases := []struct {
		name        string
		node        *v1.Node
		wantActions []string
		wantTaints  []string
	}{{
		name:        "not-ready node",
		node:        newNode("n1", v1.ConditionFalse, t0),
		wantActions: []string{"get nodes n1", "patch nodes n1"},
		wantTaints:  []string{"node.kubernetes.io/not-ready:NoSchedule"},
	}, {
		name:        "unknown node",
		node:        newNode("n1", v1.ConditionUnknown, t0),
		wantActions: []string{"get nodes n1", "patch nodes n1"},
		wantTaints:  []string{"node.kubernetes.io/unreachable:NoSchedule"},
	}, {
		name:        "cordoned node under memory pressure",
		node:        newNode("n1", v1.ConditionTrue, t0, unschedulable(), withCondition(v1.NodeMemoryPressure, v1.ConditionTrue)),
		wantActions: []string{"get nodes n1", "patch nodes n1"},
		wantTaints:  []string{"node.kubernetes.io/memory-pressure:NoSchedule", "node.kubernetes.io/unschedulable:NoSchedule"},
	}, {
		name: "ready node loses its condition taint and keeps the user's",
		node: newNode("n1", v1.ConditionTrue, t0,
			withTaints(v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoSchedule}, userTaint)),
		wantActions: []string{"get nodes n1", "patch nodes n1"},
		wantTaints:  []string{"dedicated=db:NoSchedule"},
	}, {
		name:        "nothing to change",
		node:        newNode("n1", v1.ConditionTrue, t0, withTaints(userTaint)),
		wantActions: nil,
		wantTaints:  []string{"dedicated=db:NoSchedule"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.node)
			c := newLifecycle(t, f, 1)
			f.cache(tc.node)
			if err := c.doNoScheduleTaintingPass(f.ctx(), "n1"); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantActions, f.actions()); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTaints, taints(f.node("n1"))); diff != "" {
				t.Errorf("taints (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPodBoundToNotReadyNode checks that a pod the cache delivers after the
// monitor pass is marked not ready too.
func TestPodBoundToNotReadyNode(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ready v1.ConditionStatus
		want  []string
	}{
		{name: "node Unknown", ready: v1.ConditionUnknown, want: []string{"update pods/status default/p1"}},
		{name: "node Ready", ready: v1.ConditionTrue, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := newNode("n1", tc.ready, t0)
			pod := newPod("p1", "n1", v1.ConditionTrue)
			f := newFixture(t, node, pod)
			c := newLifecycle(t, f, 1)
			f.cache(node, pod)
			remember(c, node, seen{})
			if err := c.processPod(f.ctx(), podUpdateItem{namespace: "default", name: "p1"}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, f.actions()); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
		})
	}
}
