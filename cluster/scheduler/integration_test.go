package scheduler

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
)

// TestSchedulingAgainstAPIServer runs one scheduler against a real API
// server and follows pods from creation to binding, or to Unschedulable
// and then binding once a node with room appears.
func TestSchedulingAgainstAPIServer(t *testing.T) {
	c := apiservertest.New(t, apiservertest.Options{})
	cs := c.Client()
	createNode(t, cs, "worker-1", "1", nil)
	createNode(t, cs, "worker-2", "4", map[string]string{"disk": "ssd"})
	createNode(t, cs, "worker-3", "4", nil)
	// A single scheduler needs no lease (TestLeaderElection covers that).
	s := startScheduler(t, c, "master-1", func(cfg *Config) { cfg.DisableLeaderElection = true })
	events := streamEvents(t, s)

	t.Run("binds, explains and reports", func(t *testing.T) {
		pod := testPod("web", "2")
		pod.Spec.NodeSelector = map[string]string{"disk": "ssd"}
		createPod(t, cs, pod)
		got := waitForPod(t, cs, "default", "web", "bound", bound)
		if got.Spec.NodeName != "worker-2" {
			t.Fatalf("bound to %s, want worker-2", got.Spec.NodeName)
		}
		wantAnnotations := map[string]string{
			AnnotationScheduledNode: "worker-2",
			AnnotationFilter: "worker-1: NodeAffinity: node(s) didn't match Pod's node affinity/selector\n" +
				"worker-2: passed\n" +
				"worker-3: NodeAffinity: node(s) didn't match Pod's node affinity/selector",
			AnnotationScore: "not scored: only one feasible node",
		}
		for k, want := range wantAnnotations {
			if got.Annotations[k] != want {
				t.Errorf("annotation %s =\n%s\nwant\n%s", k, got.Annotations[k], want)
			}
		}
		if cond := podCondition(got, v1.PodScheduled); cond == nil || cond.Status != v1.ConditionTrue {
			t.Errorf("PodScheduled = %+v, want True", cond)
		}
		ev := waitForEvent(t, cs, "default", "web", "Scheduled")
		if ev.Type != v1.EventTypeNormal || ev.Note != "Successfully assigned default/web to worker-2" ||
			ev.Action != "Binding" || ev.ReportingController != "default-scheduler" || ev.ReportingInstance != "default-scheduler-master-1" {
			t.Errorf("Scheduled event = type %q note %q action %q controller %q instance %q",
				ev.Type, ev.Note, ev.Action, ev.ReportingController, ev.ReportingInstance)
		}
	})

	t.Run("unschedulable until a node fits", func(t *testing.T) {
		createPod(t, cs, testPod("big", "8"))
		// Every pod has priority 0, so preemption finds no victim, and says so.
		const msg = "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
		got := waitForPod(t, cs, "default", "big", "marked Unschedulable", func(p *v1.Pod) bool {
			c := podCondition(p, v1.PodScheduled)
			return c != nil && c.Status == v1.ConditionFalse && p.Annotations[AnnotationFilter] != ""
		})
		cond := podCondition(got, v1.PodScheduled)
		if cond.Reason != v1.PodReasonUnschedulable || cond.Message != msg {
			t.Errorf("PodScheduled = %s %q, want Unschedulable %q", cond.Reason, cond.Message, msg)
		}
		wantFilter := "worker-1: NodeResourcesFit: Insufficient cpu\nworker-2: NodeResourcesFit: Insufficient cpu\nworker-3: NodeResourcesFit: Insufficient cpu"
		if f := got.Annotations[AnnotationFilter]; f != wantFilter {
			t.Errorf("filter annotation =\n%s\nwant\n%s", f, wantFilter)
		}
		if _, ok := got.Annotations[AnnotationScheduledNode]; ok {
			t.Errorf("unschedulable pod has %s", AnnotationScheduledNode)
		}
		ev := waitForEvent(t, cs, "default", "big", "FailedScheduling")
		if ev.Type != v1.EventTypeWarning || ev.Note != msg || ev.Action != "Scheduling" {
			t.Errorf("FailedScheduling event = %q %q %q", ev.Type, ev.Note, ev.Action)
		}

		// A node with room: the node add moves the pod out of
		// unschedulablePods, and it lands there.
		createNode(t, cs, "worker-4", "16", nil)
		got = waitForPod(t, cs, "default", "big", "bound", bound)
		if got.Spec.NodeName != "worker-4" || got.Annotations[AnnotationScheduledNode] != "worker-4" {
			t.Fatalf("bound to %s (annotation %q), want worker-4", got.Spec.NodeName, got.Annotations[AnnotationScheduledNode])
		}
		if !strings.Contains(got.Annotations[AnnotationFilter], "worker-4: passed") {
			t.Errorf("filter annotation not refreshed:\n%s", got.Annotations[AnnotationFilter])
		}

		decisions := s.Decisions("default", "big")
		if len(decisions) < 2 || decisions[0].Result != ResultUnschedulable || decisions[len(decisions)-1].Result != ResultScheduled {
			t.Fatalf("decisions for big: %+v", decisions)
		}
		var served []Decision
		getJSON(t, "http://"+s.Addr()+"/debug/klab/decisions?namespace=default&name=big", &served)
		if len(served) != len(decisions) || served[0].Message != msg || served[len(served)-1].Node != "worker-4" {
			t.Errorf("/debug/klab/decisions served %+v", served)
		}
	})

	t.Run("other schedulers' pods are left alone", func(t *testing.T) {
		other := testPod("other", "")
		other.Spec.SchedulerName = "my-scheduler"
		createPod(t, cs, other)
		createPod(t, cs, testPod("after-other", ""))
		waitForPod(t, cs, "default", "after-other", "bound", bound)
		// Same priority, queued earlier: had the scheduler taken it, it
		// would have been decided first.
		if d := s.Decisions("default", "other"); len(d) != 0 {
			t.Fatalf("decided about another scheduler's pod: %+v", d)
		}
		p, err := cs.CoreV1().Pods("default").Get(context.Background(), "other", metav1.GetOptions{})
		if err != nil || p.Spec.NodeName != "" {
			t.Fatalf("other pod: %v, node %q", err, p.Spec.NodeName)
		}
	})

	t.Run("debug endpoints", func(t *testing.T) {
		resp, err := http.Get("http://" + s.Addr() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "ok" {
			t.Errorf("/healthz = %q", body)
		}
		// A pod is seen bound (through the API server) a moment before
		// the scheduler's binding cycle ends and counts it.
		var st Status
		eventually(t, "the status to count three pods scheduled", func() bool {
			st = Status{}
			getJSON(t, "http://"+s.Addr()+"/debug/klab/status", &st)
			return st.Counters.Scheduled >= 3
		})
		if !st.Leader || st.LeaderElection || st.LeaderHolder != "master-1" || st.Identity != "master-1" {
			t.Errorf("status leader %v election %v holder %q identity %q", st.Leader, st.LeaderElection, st.LeaderHolder, st.Identity)
		}
		if st.Counters.Scheduled < 3 || st.Counters.Unschedulable < 1 || st.Nodes != 4 || st.CycleP99 < st.CycleP50 || st.CycleP50 <= 0 {
			t.Errorf("status %+v", st)
		}

		// The stream carried the decisions as they happened.
		seen := map[string]bool{}
		timeout := time.After(waitTimeout)
		for !(seen["web/Scheduled"] && seen["big/Unschedulable"] && seen["big/Scheduled"] && seen["after-other/Scheduled"]) {
			select {
			case e, ok := <-events:
				if !ok {
					t.Fatalf("event stream ended; saw %v", seen)
				}
				if e.Kind == EventDecision {
					seen[e.Decision.Name+"/"+e.Decision.Result] = true
				}
			case <-timeout:
				t.Fatalf("event stream lacks decisions; saw %v", seen)
			}
		}
	})
}
