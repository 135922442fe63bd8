package queue

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/klab-dev/klab/cluster/timing"
)

var start = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// labTimings are the queue's timings at speed 10, as a lab runs them.
func labTimings() Timings {
	s := timing.Speed(10)
	return Timings{
		InitialBackoff:     s.Scale(timing.PodInitialBackoff),
		MaxBackoff:         s.Scale(timing.PodMaxBackoff),
		MaxInUnschedulable: s.Scale(timing.PodMaxInUnschedulablePodsDuration),
	}
}

func newTestQueue() (*PriorityQueue, *testingclock.FakeClock) {
	c := testingclock.NewFakeClock(start)
	return New(labTimings(), c), c
}

func newPod(name string, priority int32) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
	p.Spec.Priority = &priority
	return p
}

// popNow pops without waiting: the pod must already be in activeQ.
func popNow(t *testing.T, q *PriorityQueue) *QueuedPodInfo {
	t.Helper()
	// Pop takes a pod that is already there before it looks at ctx, so a
	// cancelled context makes it fail rather than wait when activeQ is
	// empty.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	q.mu.Lock()
	n := q.activeQ.Len()
	q.mu.Unlock()
	if n == 0 {
		t.Fatal("activeQ is empty")
	}
	p, err := q.Pop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func lengths(q *PriorityQueue) [3]int {
	a, b, u := q.Lengths()
	return [3]int{a, b, u}
}

func TestBackoffDuration(t *testing.T) {
	q, _ := newTestQueue()
	tests := []struct {
		attempts int
		want     time.Duration
	}{
		{0, 0},
		{1, 100 * time.Millisecond},
		{2, 200 * time.Millisecond},
		{3, 400 * time.Millisecond},
		{4, 800 * time.Millisecond},
		{5, time.Second}, // 1.6 s capped at PodMaxBackoff/10
		{50, time.Second},
	}
	for _, tt := range tests {
		t.Run(time.Duration(tt.attempts).String(), func(t *testing.T) {
			if got := q.BackoffDuration(tt.attempts); got != tt.want {
				t.Errorf("BackoffDuration(%d) = %v, want %v", tt.attempts, got, tt.want)
			}
		})
	}
}

func TestPopOrder(t *testing.T) {
	q, c := newTestQueue()
	q.Add(newPod("low-early", 0))
	c.Step(time.Millisecond)
	q.Add(newPod("high", 1000))
	c.Step(time.Millisecond)
	q.Add(newPod("low-late", 0))
	c.Step(time.Millisecond)
	q.Add(newPod("negative", -5))
	var got []string
	for range 4 {
		got = append(got, popNow(t, q).Pod.Name)
	}
	want := []string{"high", "low-early", "low-late", "negative"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pop order = %v, want %v", got, want)
		}
	}
}

func TestFailedPodPlacement(t *testing.T) {
	tests := []struct {
		name          string
		plugins       []string
		eventInCycle  bool
		wantLocations [3]int // active, backoff, unschedulable
	}{
		{name: "rejected by a plugin waits for an event", plugins: []string{"NodeResourcesFit"}, wantLocations: [3]int{0, 0, 1}},
		{name: "an error backs off", wantLocations: [3]int{0, 1, 0}},
		{name: "an event during the cycle backs off instead of waiting", plugins: []string{"NodeResourcesFit"}, eventInCycle: true, wantLocations: [3]int{0, 1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _ := newTestQueue()
			q.Add(newPod("p", 0))
			p := popNow(t, q)
			cycle := q.SchedulingCycle()
			if tt.eventInCycle {
				q.MoveAllToActiveOrBackoffQueue(nil)
			}
			p.UnschedulablePlugins = tt.plugins
			if err := q.AddUnschedulableIfNotPresent(p, cycle); err != nil {
				t.Fatal(err)
			}
			if got := lengths(q); got != tt.wantLocations {
				t.Errorf("active/backoff/unschedulable = %v, want %v", got, tt.wantLocations)
			}
			if err := q.AddUnschedulableIfNotPresent(p, cycle); err == nil {
				t.Error("adding the same pod twice succeeded")
			}
		})
	}
}

// failOnce pops the only pod and hands it back as unschedulable.
func failOnce(t *testing.T, q *PriorityQueue) {
	t.Helper()
	p := popNow(t, q)
	p.UnschedulablePlugins = []string{"NodeResourcesFit"}
	if err := q.AddUnschedulableIfNotPresent(p, q.SchedulingCycle()); err != nil {
		t.Fatal(err)
	}
}

func TestMoveOnEvent(t *testing.T) {
	tests := []struct {
		name    string
		elapsed time.Duration
		want    [3]int
	}{
		{name: "still backing off goes to backoffQ", elapsed: 50 * time.Millisecond, want: [3]int{0, 1, 0}},
		{name: "backoff over goes to activeQ", elapsed: 100 * time.Millisecond, want: [3]int{1, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, c := newTestQueue()
			q.Add(newPod("p", 0))
			failOnce(t, q)
			c.Step(tt.elapsed)
			q.MoveAllToActiveOrBackoffQueue(nil)
			if got := lengths(q); got != tt.want {
				t.Errorf("active/backoff/unschedulable = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBackoffFlush(t *testing.T) {
	q, c := newTestQueue()
	q.Add(newPod("p", 0))
	for attempt := 1; attempt <= 3; attempt++ {
		p := popNow(t, q)
		if p.Attempts != attempt {
			t.Fatalf("attempt %d: pod has %d attempts", attempt, p.Attempts)
		}
		p.UnschedulablePlugins = nil // an error: straight to backoff
		if err := q.AddUnschedulableIfNotPresent(p, q.SchedulingCycle()); err != nil {
			t.Fatal(err)
		}
		backoff := q.BackoffDuration(attempt)
		c.Step(backoff - time.Millisecond)
		q.flush()
		if got := lengths(q); got != [3]int{0, 1, 0} {
			t.Fatalf("attempt %d: 1ms before the %v backoff ends, queues = %v", attempt, backoff, got)
		}
		c.Step(time.Millisecond)
		q.flush()
		if got := lengths(q); got != [3]int{1, 0, 0} {
			t.Fatalf("attempt %d: when the %v backoff ends, queues = %v", attempt, backoff, got)
		}
	}
}

func TestUnschedulableLeftoverFlush(t *testing.T) {
	q, c := newTestQueue()
	q.Add(newPod("old", 0))
	failOnce(t, q)
	c.Step(10 * time.Second)
	q.Add(newPod("young", 0))
	failOnce(t, q)

	max := labTimings().MaxInUnschedulable // 30 s at speed 10
	c.Step(max - 10*time.Second - time.Millisecond)
	q.flush()
	if got := lengths(q); got != [3]int{0, 0, 2} {
		t.Fatalf("before the oldest waited %v: queues = %v", max, got)
	}
	c.Step(time.Millisecond)
	q.flush()
	if got := lengths(q); got != [3]int{1, 0, 1} {
		t.Fatalf("when the oldest waited %v: queues = %v", max, got)
	}
	if p := popNow(t, q); p.Pod.Name != "old" {
		t.Fatalf("flushed %s, want old", p.Pod.Name)
	}
	c.Step(10 * time.Second)
	q.flush()
	if got := lengths(q); got != [3]int{1, 0, 0} {
		t.Fatalf("when the younger waited %v: queues = %v", max, got)
	}
}

// TestRunFlushesOnTime checks the flush loop wakes by itself at the end
// of a backoff.
func TestRunFlushesOnTime(t *testing.T) {
	q, c := newTestQueue()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { q.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	q.Add(newPod("p", 0))
	p := popNow(t, q)
	if err := q.AddUnschedulableIfNotPresent(p, q.SchedulingCycle()); err != nil {
		t.Fatal(err)
	}
	// The loop arms a timer for the backoff's end; wait until it has.
	deadline := time.Now().Add(5 * time.Second)
	for !c.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("flush loop never armed a timer")
		}
		time.Sleep(time.Millisecond)
	}
	c.Step(q.BackoffDuration(1))
	popCtx, popCancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer popCancel()
	if _, err := q.Pop(popCtx); err != nil {
		t.Fatalf("pod did not come back after its backoff: %v", err)
	}
}

func TestPopWaits(t *testing.T) {
	q, _ := newTestQueue()
	got := make(chan string)
	go func() {
		p, err := q.Pop(context.Background())
		if err != nil {
			got <- err.Error()
			return
		}
		got <- p.Pod.Name
	}()
	q.Add(newPod("late", 0))
	if name := <-got; name != "late" {
		t.Fatalf("Pop returned %q, want late", name)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, err := q.Pop(ctx)
		got <- err.Error()
	}()
	cancel()
	if msg := <-got; msg != context.Canceled.Error() {
		t.Fatalf("Pop after cancel: %q", msg)
	}

	go func() {
		_, err := q.Pop(context.Background())
		if errors.Is(err, ErrClosed) {
			got <- "closed"
			return
		}
		got <- "not closed"
	}()
	q.Close()
	if msg := <-got; msg != "closed" {
		t.Fatalf("Pop after Close: %s", msg)
	}
}

func TestUpdateOfUnschedulablePod(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *v1.Pod)
		want   [3]int
	}{
		{name: "status change keeps it waiting", change: func(p *v1.Pod) {
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
			p.ResourceVersion = "9"
		}, want: [3]int{0, 0, 1}},
		{name: "the scheduler's own annotations keep it waiting", change: func(p *v1.Pod) {
			p.Annotations = map[string]string{"klab.dev/filter": "n1: NodeResourcesFit: Insufficient cpu"}
		}, want: [3]int{0, 0, 1}},
		{name: "a new toleration retries it", change: func(p *v1.Pod) {
			p.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpExists}}
		}, want: [3]int{1, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, c := newTestQueue()
			old := newPod("p", 0)
			q.Add(old)
			failOnce(t, q)
			c.Step(time.Second) // past the first backoff
			updated := old.DeepCopy()
			tt.change(updated)
			q.Update(old, updated)
			if got := lengths(q); got != tt.want {
				t.Errorf("queues = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDeleteRemovesEverywhere(t *testing.T) {
	q, _ := newTestQueue()
	q.Add(newPod("a", 0))
	q.Add(newPod("b", 0))
	failOnce(t, q) // a goes to unschedulablePods
	q.Delete(newPod("a", 0))
	q.Delete(newPod("b", 0))
	if got := lengths(q); got != [3]int{0, 0, 0} {
		t.Fatalf("queues after deleting everything = %v", got)
	}
}

func TestAssignedPodAddedMovesAffinityMatches(t *testing.T) {
	q, c := newTestQueue()
	wantsWeb := newPod("wants-web", 0)
	wantsWeb.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			TopologyKey:   v1.LabelHostname,
		}},
	}}
	plain := newPod("plain", 0)
	for _, p := range []*v1.Pod{wantsWeb, plain} {
		q.Add(p)
		failOnce(t, q)
	}
	c.Step(time.Second)

	db := newPod("db", 0)
	db.Labels = map[string]string{"app": "db"}
	q.AssignedPodAdded(db)
	if got := lengths(q); got != [3]int{0, 0, 2} {
		t.Fatalf("after an unrelated pod was bound, queues = %v", got)
	}
	web := newPod("web", 0)
	web.Labels = map[string]string{"app": "web"}
	q.AssignedPodAdded(web)
	if got := lengths(q); got != [3]int{1, 0, 1} {
		t.Fatalf("after a web pod was bound, queues = %v", got)
	}
	if p := popNow(t, q); p.Pod.Name != "wants-web" {
		t.Fatalf("moved %s, want wants-web", p.Pod.Name)
	}
}

func TestNodeSchedulingPropertiesChanged(t *testing.T) {
	base := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "b"}}}
	base.Status.Allocatable = v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}
	base.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	tests := []struct {
		name   string
		change func(n *v1.Node)
		want   bool
	}{
		{"heartbeat only", func(n *v1.Node) {
			n.Status.Conditions[0].LastHeartbeatTime = metav1.Now()
			n.ResourceVersion = "2"
		}, false},
		{"allocatable", func(n *v1.Node) { n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("4") }, true},
		{"labels", func(n *v1.Node) { n.Labels["disk"] = "ssd" }, true},
		{"taints", func(n *v1.Node) { n.Spec.Taints = []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoSchedule}} }, true},
		{"unschedulable", func(n *v1.Node) { n.Spec.Unschedulable = true }, true},
		{"ready condition", func(n *v1.Node) { n.Status.Conditions[0].Status = v1.ConditionFalse }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := base.DeepCopy()
			tt.change(n)
			if got := NodeSchedulingPropertiesChanged(base, n); got != tt.want {
				t.Errorf("NodeSchedulingPropertiesChanged = %v, want %v", got, tt.want)
			}
		})
	}
}
