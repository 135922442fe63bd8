package nodelifecycle

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"

	"github.com/klab-dev/klab/cluster/timing"
)

func newTaintEviction(t *testing.T, f *fixture, speed timing.Speed) *TaintEvictionController {
	t.Helper()
	tc, err := newTaintEvictionController(f.ctx(), f.client, f.factory.Core().V1().Pods(), f.factory.Core().V1().Nodes(),
		f.recorder, nil, speed, f.clock)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// deleteDue carries out the evictions that are due, as the deletion
// workers would.
func deleteDue(tc *TaintEvictionController) {
	for tc.deletions.Len() > 0 {
		tc.deletionWorker.ProcessNextWorkItem(context.Background())
	}
}

func tolerate(key string, seconds *int64) v1.Toleration {
	return v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: seconds}
}

func seconds(n int64) *int64 { return &n }

// TestTaintEviction drives the taint eviction controller with a fake clock:
// a node update, then the clock moves on, then (maybe) the taint goes.
func TestTaintEviction(t *testing.T) {
	cases := []struct {
		name  string
		speed timing.Speed
		pod   *v1.Pod
		// before is how long after the taint the deletion must not have
		// happened yet; after, when it must have (0: never).
		before, after time.Duration
		// untaintAt removes the taint that long after it appeared.
		untaintAt   time.Duration
		wantActions []string
		wantEvents  []string
	}{{
		name:        "pod without a toleration is deleted at once",
		speed:       1,
		pod:         newPod("p1", "n1", v1.ConditionTrue),
		wantActions: []string{"get pods default/p1", "patch pods/status default/p1", "delete pods default/p1"},
		wantEvents:  []string{"Normal TaintManagerEviction Marking for deletion Pod default/p1"},
	}, {
		name:        "tolerationSeconds delays the deletion",
		speed:       1,
		pod:         newPod("p1", "n1", v1.ConditionTrue, tolerate(v1.TaintNodeUnreachable, seconds(300))),
		before:      299 * time.Second,
		after:       300 * time.Second,
		wantActions: []string{"get pods default/p1", "patch pods/status default/p1", "delete pods default/p1"},
		wantEvents:  []string{"Normal TaintManagerEviction Marking for deletion Pod default/p1"},
	}, {
		name:        "the lab's speed divides tolerationSeconds",
		speed:       50,
		pod:         newPod("p1", "n1", v1.ConditionTrue, tolerate(v1.TaintNodeUnreachable, seconds(300))),
		before:      5900 * time.Millisecond,
		after:       6 * time.Second,
		wantActions: []string{"get pods default/p1", "patch pods/status default/p1", "delete pods default/p1"},
		wantEvents:  []string{"Normal TaintManagerEviction Marking for deletion Pod default/p1"},
	}, {
		name:       "taint removed in time cancels the deletion",
		speed:      1,
		pod:        newPod("p1", "n1", v1.ConditionTrue, tolerate(v1.TaintNodeUnreachable, seconds(300))),
		before:     200 * time.Second,
		untaintAt:  200 * time.Second,
		wantEvents: []string{"Normal TaintManagerEviction Cancelling deletion of Pod default/p1"},
	}, {
		name:   "toleration without seconds keeps the pod forever",
		speed:  1,
		pod:    newPod("p1", "n1", v1.ConditionTrue, tolerate(v1.TaintNodeUnreachable, nil)),
		before: 24 * time.Hour,
	}, {
		name:        "toleration of another taint does not help",
		speed:       1,
		pod:         newPod("p1", "n1", v1.ConditionTrue, tolerate(v1.TaintNodeNotReady, nil)),
		wantActions: []string{"get pods default/p1", "patch pods/status default/p1", "delete pods default/p1"},
		wantEvents:  []string{"Normal TaintManagerEviction Marking for deletion Pod default/p1"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := newNode("n1", v1.ConditionUnknown, t0, withTaints(unreachableNoExecute))
			objects := []runtime.Object{node, tc.pod}
			f := newFixture(t, objects...)
			c := newTaintEviction(t, f, tc.speed)
			f.cache(objects...)

			c.handleNodeUpdate(f.ctx(), "n1")
			if tc.before > 0 {
				f.clock.Step(tc.before)
				deleteDue(c)
				if got := f.actions(); len(got) != 0 {
					t.Fatalf("%v after the taint: %v, want nothing yet", tc.before, got)
				}
			}
			if tc.untaintAt > 0 {
				untainted := node.DeepCopy()
				untainted.Spec.Taints = nil
				f.cache(untainted)
				c.handleNodeUpdate(f.ctx(), "n1")
			}
			if tc.after > tc.before {
				f.clock.Step(tc.after - tc.before)
			} else {
				f.clock.Step(24 * time.Hour) // anything due is due by now
			}
			deleteDue(c)
			if diff := cmp.Diff(tc.wantActions, f.actions()); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEvents, f.events()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEvictionMarksDisruptionTarget checks the condition an evicted pod
// gets before it is deleted.
func TestEvictionMarksDisruptionTarget(t *testing.T) {
	node := newNode("n1", v1.ConditionUnknown, t0, withTaints(unreachableNoExecute))
	pod := newPod("p1", "n1", v1.ConditionTrue)
	f := newFixture(t, node, pod)
	c := newTaintEviction(t, f, 1)
	f.cache(node, pod)
	// Keep the pod in the fake API server after the delete, to read it.
	f.client.PrependReactor("delete", "pods", func(core.Action) (bool, runtime.Object, error) { return true, nil, nil })
	c.handleNodeUpdate(f.ctx(), "n1")
	deleteDue(c)
	got, err := f.client.CoreV1().Pods("default").Get(f.ctx(), "p1", metav1GetOptions)
	if err != nil {
		t.Fatal(err)
	}
	var cond *v1.PodCondition
	for i := range got.Status.Conditions {
		if got.Status.Conditions[i].Type == v1.DisruptionTarget {
			cond = &got.Status.Conditions[i]
		}
	}
	if cond == nil || cond.Status != v1.ConditionTrue || cond.Reason != "DeletionByTaintManager" || cond.Message != "Taint manager: deleting due to NoExecute taint" {
		t.Errorf("DisruptionTarget = %+v, want True DeletionByTaintManager", cond)
	}
	want := []string{"EvictionScheduled n1 default/p1", "PodEvicted n1 default/p1"}
	if diff := cmp.Diff(want, f.takeTransitions()); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
}

// TestEvictionNotRepeated checks that a pod already deleted (and still
// terminating) is not deleted again on every update of its node.
func TestEvictionNotRepeated(t *testing.T) {
	node := newNode("n1", v1.ConditionUnknown, t0, withTaints(unreachableNoExecute))
	pod := newPod("p1", "n1", v1.ConditionTrue, tolerate(v1.TaintNodeUnreachable, seconds(10)))
	f := newFixture(t, node, pod)
	c := newTaintEviction(t, f, 1)
	f.cache(node, pod)
	c.handleNodeUpdate(f.ctx(), "n1")
	f.clock.Step(10 * time.Second)
	deleteDue(c)
	if got := f.actions(); len(got) != 3 {
		t.Fatalf("first eviction sent %v, want get, patch, delete", got)
	}
	c.handlePodUpdate(f.ctx(), updateItem{nodeName: "n1", podNamespace: "default", podName: "p1"})
	f.clock.Step(time.Hour)
	deleteDue(c)
	if got := f.actions(); len(got) != 0 {
		t.Errorf("pod evicted again: %v", got)
	}
}
