package podautoscaler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cases below are upstream's replica_calculator_test.go resource cases
// (TestReplicaCalc<Name>), written as a table from their inputs and
// expected outputs. Their pods are built as upstream's test client builds
// them: two containers, each requesting the pod's request; a Ready
// condition with the given status and no transition time; a start time
// that is the zero time unless given (hot: now, cool: three minutes ago,
// against a two-minute CPU initialization period and a ten-second
// readiness delay); and metrics per container at the given level,
// stamped with the zero time over a one-minute window.

const upstreamContainersPerPod = 2

type upstreamCase struct {
	name            string
	current         int32
	readiness       []corev1.ConditionStatus
	startTime       []string // "hot", "cool" or "" (the zero time)
	phase           []corev1.PodPhase
	deleting        []bool
	requests        []string
	levels          []int64
	podNames        []string // metric names, when they are not test-pod-i
	target          int32
	want            int32
	wantUtilization int32
	wantValue       int64
	wantErr         string
}

func (tc upstreamCase) pods() []*corev1.Pod {
	count := int(tc.current)
	if len(tc.phase) > count {
		count = len(tc.phase) // failed pods are not in current
	}
	var pods []*corev1.Pod
	for i := 0; i < count; i++ {
		readiness := corev1.ConditionTrue
		if i < len(tc.readiness) {
			readiness = tc.readiness[i]
		}
		var start metav1.Time
		if i < len(tc.startTime) {
			switch tc.startTime[i] {
			case "hot":
				start = metav1.NewTime(calcNow)
			case "cool":
				start = metav1.NewTime(calcNow.Add(-3 * time.Minute))
			}
		}
		phase := corev1.PodRunning
		if i < len(tc.phase) {
			phase = tc.phase[i]
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("test-pod-%d", i), Namespace: "test-namespace"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c0"}, {Name: "c1"}}},
			Status: corev1.PodStatus{Phase: phase, StartTime: &start, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: readiness},
			}},
		}
		if i < len(tc.deleting) && tc.deleting[i] {
			now := metav1.NewTime(calcNow)
			pod.DeletionTimestamp = &now
		}
		if i < len(tc.requests) {
			for c := range pod.Spec.Containers {
				pod.Spec.Containers[c].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(tc.requests[i])}
			}
		}
		pods = append(pods, pod)
	}
	return pods
}

func (tc upstreamCase) metrics() map[string]podMetric {
	m := map[string]podMetric{}
	for i, level := range tc.levels {
		name := fmt.Sprintf("test-pod-%d", i)
		if i < len(tc.podNames) {
			name = tc.podNames[i]
		}
		m[name] = podMetric{value: level * upstreamContainersPerPod, window: time.Minute}
	}
	return m
}

func ones(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "1.0"
	}
	return out
}

var (
	cTrue  = corev1.ConditionTrue
	cFalse = corev1.ConditionFalse
)

func TestReplicaCalcUpstreamCases(t *testing.T) {
	tests := []upstreamCase{
		{name: "DisjointResourcesMetrics", current: 1, requests: ones(1), levels: []int64{100}, podNames: []string{"an-older-pod-name"}, target: 100,
			wantErr: "no metrics returned matched known pods"},
		{name: "ScaleUp", current: 3, requests: ones(3), levels: []int64{300, 500, 700}, target: 30, want: 5, wantUtilization: 50, wantValue: 2 * 500},
		{name: "ScaleUpUnreadyLessScale", current: 3, readiness: []corev1.ConditionStatus{cFalse, cTrue, cTrue}, requests: ones(3), levels: []int64{300, 500, 700}, target: 30,
			want: 4, wantUtilization: 60, wantValue: 2 * 600},
		{name: "ScaleUpHotCpuLessScale", current: 3, startTime: []string{"hot", "cool", "cool"}, requests: ones(3), levels: []int64{300, 500, 700}, target: 30,
			want: 4, wantUtilization: 60, wantValue: 2 * 600},
		{name: "ScaleUpUnreadyNoScale", current: 3, readiness: []corev1.ConditionStatus{cTrue, cFalse, cFalse}, requests: ones(3), levels: []int64{400, 500, 700}, target: 30,
			want: 3, wantUtilization: 40, wantValue: 2 * 400},
		{name: "ScaleHotCpuNoScale", current: 3, readiness: []corev1.ConditionStatus{cTrue, cFalse, cFalse}, startTime: []string{"cool", "hot", "hot"}, requests: ones(3), levels: []int64{400, 500, 700}, target: 30,
			want: 3, wantUtilization: 40, wantValue: 2 * 400},
		{name: "ScaleUpIgnoresFailedPods", current: 2, readiness: []corev1.ConditionStatus{cTrue, cTrue, cFalse, cFalse},
			phase: []corev1.PodPhase{corev1.PodRunning, corev1.PodRunning, corev1.PodFailed, corev1.PodFailed}, requests: ones(4), levels: []int64{500, 700}, target: 30,
			want: 4, wantUtilization: 60, wantValue: 2 * 600},
		{name: "ScaleUpIgnoresDeletionPods", current: 2, readiness: []corev1.ConditionStatus{cTrue, cTrue, cFalse, cFalse},
			phase:    []corev1.PodPhase{corev1.PodRunning, corev1.PodRunning, corev1.PodRunning, corev1.PodRunning},
			deleting: []bool{false, false, true, true}, requests: ones(4), levels: []int64{500, 700}, target: 30,
			want: 4, wantUtilization: 60, wantValue: 2 * 600},
		{name: "ScaleDown", current: 5, requests: ones(5), levels: []int64{100, 300, 500, 250, 250}, target: 50, want: 3, wantUtilization: 28, wantValue: 2 * 280},
		{name: "ScaleDownIncludeUnreadyPods", current: 5, readiness: []corev1.ConditionStatus{cTrue, cTrue, cTrue, cFalse, cFalse}, requests: ones(5),
			levels: []int64{100, 300, 500, 250, 250}, target: 50, want: 2, wantUtilization: 30, wantValue: 2 * 300},
		{name: "ScaleDownExcludeUnscheduledPods", current: 5, readiness: []corev1.ConditionStatus{cTrue, cFalse, cFalse, cFalse, cFalse},
			phase: []corev1.PodPhase{corev1.PodRunning, corev1.PodPending, corev1.PodPending, corev1.PodPending, corev1.PodPending}, requests: ones(5),
			levels: []int64{100}, target: 50, want: 1, wantUtilization: 10, wantValue: 2 * 100},
		{name: "ScaleDownIgnoreHotCpuPods", current: 5, startTime: []string{"cool", "cool", "cool", "hot", "hot"}, requests: ones(5),
			levels: []int64{100, 300, 500, 250, 250}, target: 50, want: 2, wantUtilization: 30, wantValue: 2 * 300},
		{name: "ScaleDownIgnoresFailedPods", current: 5, readiness: []corev1.ConditionStatus{cTrue, cTrue, cTrue, cTrue, cTrue, cFalse, cFalse},
			phase:    []corev1.PodPhase{corev1.PodRunning, corev1.PodRunning, corev1.PodRunning, corev1.PodRunning, corev1.PodRunning, corev1.PodFailed, corev1.PodFailed},
			requests: ones(7), levels: []int64{100, 300, 500, 250, 250}, target: 50, want: 3, wantUtilization: 28, wantValue: 2 * 280},
		{name: "ScaleDownIgnoresDeletionPods", current: 5, readiness: []corev1.ConditionStatus{cTrue, cTrue, cTrue, cTrue, cTrue, cFalse, cFalse},
			phase:    []corev1.PodPhase{corev1.PodRunning, corev1.PodRunning, corev1.PodRunning, corev1.PodRunning, corev1.PodRunning, corev1.PodRunning, corev1.PodRunning},
			deleting: []bool{false, false, false, false, false, true, true},
			requests: ones(7), levels: []int64{100, 300, 500, 250, 250}, target: 50, want: 3, wantUtilization: 28, wantValue: 2 * 280},
		{name: "Tolerance", current: 3, requests: []string{"0.9", "1.0", "1.1"}, levels: []int64{1010, 1030, 1020}, target: 100, want: 3, wantUtilization: 102, wantValue: 2 * 1020},
		{name: "SuperfluousMetrics", current: 4, requests: ones(4), levels: []int64{4000, 9500, 3000, 7000, 3200, 2000}, target: 100, want: 24, wantUtilization: 587, wantValue: 2 * 5875},
		{name: "MissingMetrics", current: 4, requests: ones(4), levels: []int64{400, 95}, target: 100, want: 3, wantUtilization: 24, wantValue: 495},
		{name: "EmptyCPURequest", current: 1, levels: []int64{200}, target: 100, wantErr: "missing request for"},
		{name: "MissingMetricsNoChangeEq", current: 2, requests: ones(2), levels: []int64{1000}, target: 100, want: 2, wantUtilization: 100, wantValue: 2 * 1000},
		{name: "MissingMetricsNoChangeGt", current: 2, requests: ones(2), levels: []int64{1900}, target: 100, want: 2, wantUtilization: 190, wantValue: 2 * 1900},
		{name: "MissingMetricsNoChangeLt", current: 2, requests: ones(2), levels: []int64{600}, target: 100, want: 2, wantUtilization: 60, wantValue: 2 * 600},
		{name: "MissingMetricsUnreadyChange", current: 3, readiness: []corev1.ConditionStatus{cFalse, cTrue, cTrue}, requests: ones(3), levels: []int64{100, 450}, target: 50,
			want: 3, wantUtilization: 45, wantValue: 2 * 450},
		{name: "MissingMetricsHotCpuNoChange", current: 3, startTime: []string{"hot", "cool", "cool"}, requests: ones(3), levels: []int64{100, 450}, target: 50,
			want: 3, wantUtilization: 45, wantValue: 2 * 450},
		{name: "MissingMetricsUnreadyScaleUp", current: 3, readiness: []corev1.ConditionStatus{cFalse, cTrue, cTrue}, requests: ones(3), levels: []int64{100, 2000}, target: 50,
			want: 4, wantUtilization: 200, wantValue: 2 * 2000},
		{name: "MissingMetricsHotCpuScaleUp", current: 3, readiness: []corev1.ConditionStatus{cFalse, cTrue, cTrue}, startTime: []string{"hot", "cool", "cool"}, requests: ones(3),
			levels: []int64{100, 2000}, target: 50, want: 4, wantUtilization: 200, wantValue: 2 * 2000},
		{name: "MissingMetricsUnreadyScaleDown", current: 4, readiness: []corev1.ConditionStatus{cFalse, cTrue, cTrue, cTrue}, requests: ones(4), levels: []int64{100, 100, 100}, target: 50,
			want: 3, wantUtilization: 10, wantValue: 2 * 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calc := &replicaCalculator{tolerance: defaultTolerance, cpuInitializationPeriod: 2 * time.Minute,
				delayOfInitialReadinessStatus: 10 * time.Second, now: func() time.Time { return calcNow }}
			got, utilization, value, err := calc.utilizationReplicas(tc.current, tc.target, corev1.ResourceCPU, tc.metrics(), tc.pods())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || utilization != tc.wantUtilization || value != tc.wantValue {
				t.Errorf("replicas, utilization, value = %d, %d%%, %d; want %d, %d%%, %d", got, utilization, value, tc.want, tc.wantUtilization, tc.wantValue)
			}
		})
	}
}

// TestGroupPods is upstream's TestGroupPods: which pods count as ready,
// which are unready and which miss a metric.
func TestGroupPods(t *testing.T) {
	now := calcNow
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }
	ready := func(status corev1.ConditionStatus, d time.Duration) []corev1.PodCondition {
		return []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: *at(d)}}
	}
	pod := func(name string, phase corev1.PodPhase, start *metav1.Time, conds []corev1.PodCondition) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: phase, StartTime: start, Conditions: conds}}
	}
	tests := []struct {
		name        string
		pods        []*corev1.Pod
		metrics     map[string]podMetric
		res         corev1.ResourceName
		wantReady   int
		wantUnready []string
		wantMissing []string
	}{
		{name: "void", res: corev1.ResourceCPU},
		{name: "count in a ready pod - memory", pods: []*corev1.Pod{pod("bentham", corev1.PodSucceeded, nil, nil)},
			metrics: map[string]podMetric{"bentham": {value: 1, timestamp: now, window: time.Minute}}, res: corev1.ResourceMemory, wantReady: 1},
		{name: "unready a pod without ready condition - CPU", pods: []*corev1.Pod{pod("lucretius", corev1.PodSucceeded, at(0), nil)},
			metrics: map[string]podMetric{"lucretius": {value: 1}}, res: corev1.ResourceCPU, wantUnready: []string{"lucretius"}},
		{name: "count in a ready pod with fresh metrics during initialization period - CPU",
			pods:    []*corev1.Pod{pod("bentham", corev1.PodSucceeded, at(-time.Minute), ready(cTrue, -30*time.Second))},
			metrics: map[string]podMetric{"bentham": {value: 1, timestamp: now, window: 30 * time.Second}}, res: corev1.ResourceCPU, wantReady: 1},
		{name: "unready a ready pod without fresh metrics during initialization period - CPU",
			pods:    []*corev1.Pod{pod("bentham", corev1.PodSucceeded, at(-time.Minute), ready(cTrue, -30*time.Second))},
			metrics: map[string]podMetric{"bentham": {value: 1, timestamp: now, window: time.Minute}}, res: corev1.ResourceCPU, wantUnready: []string{"bentham"}},
		{name: "unready an unready pod during initialization period - CPU",
			pods:    []*corev1.Pod{pod("lucretius", corev1.PodSucceeded, at(-10*time.Minute), ready(cFalse, -9*time.Minute-54*time.Second))},
			metrics: map[string]podMetric{"lucretius": {value: 1}}, res: corev1.ResourceCPU, wantUnready: []string{"lucretius"}},
		{name: "count in a ready pod without fresh metrics after initialization period - CPU",
			pods:    []*corev1.Pod{pod("bentham", corev1.PodSucceeded, at(-3*time.Minute), ready(cTrue, -3*time.Minute))},
			metrics: map[string]podMetric{"bentham": {value: 1, timestamp: now.Add(-2 * time.Minute), window: time.Minute}}, res: corev1.ResourceCPU, wantReady: 1},
		{name: "count in an unready pod that was ready after initialization period - CPU",
			pods:    []*corev1.Pod{pod("lucretius", corev1.PodSucceeded, at(-10*time.Minute), ready(cFalse, -9*time.Minute))},
			metrics: map[string]podMetric{"lucretius": {value: 1}}, res: corev1.ResourceCPU, wantReady: 1},
		{name: "unready pod that has never been ready after initialization period - CPU",
			pods:    []*corev1.Pod{pod("lucretius", corev1.PodSucceeded, at(-10*time.Minute), ready(cFalse, -9*time.Minute-50*time.Second))},
			metrics: map[string]podMetric{"lucretius": {value: 1}}, res: corev1.ResourceCPU, wantReady: 1},
		{name: "a missing pod", pods: []*corev1.Pod{pod("epicurus", corev1.PodSucceeded, at(-3*time.Minute), nil)},
			res: corev1.ResourceCPU, wantMissing: []string{"epicurus"}},
		{name: "several pods", pods: []*corev1.Pod{
			pod("lucretius", corev1.PodSucceeded, at(0), nil),
			pod("niccolo", corev1.PodSucceeded, at(-3*time.Minute), ready(cTrue, -3*time.Minute)),
			pod("epicurus", corev1.PodSucceeded, at(-3*time.Minute), nil),
		}, metrics: map[string]podMetric{"lucretius": {value: 1}, "niccolo": {value: 1}}, res: corev1.ResourceCPU,
			wantReady: 1, wantUnready: []string{"lucretius"}, wantMissing: []string{"epicurus"}},
		{name: "pending pods are unready", pods: []*corev1.Pod{pod("unscheduled", corev1.PodPending, nil, nil)},
			res: corev1.ResourceCPU, wantUnready: []string{"unscheduled"}},
	}
	set := func(names []string) map[string]bool {
		out := map[string]bool{}
		for _, n := range names {
			out[n] = true
		}
		return out
	}
	calc := &replicaCalculator{cpuInitializationPeriod: 2 * time.Minute, delayOfInitialReadinessStatus: 10 * time.Second, now: func() time.Time { return now }}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			metrics := tc.metrics
			if metrics == nil {
				metrics = map[string]podMetric{}
			}
			readyCount, unready, missing, _ := calc.groupPods(tc.pods, metrics, tc.res)
			if readyCount != tc.wantReady {
				t.Errorf("ready = %d, want %d", readyCount, tc.wantReady)
			}
			if fmt.Sprint(unready) != fmt.Sprint(set(tc.wantUnready)) {
				t.Errorf("unready = %v, want %v", unready, tc.wantUnready)
			}
			if fmt.Sprint(missing) != fmt.Sprint(set(tc.wantMissing)) {
				t.Errorf("missing = %v, want %v", missing, tc.wantMissing)
			}
		})
	}
}
