package podautoscaler

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var calcNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// testPods makes pods "pod-0".. with one container each requesting the
// given CPU; ready lists their Ready condition (all true when nil); they
// started long ago, past the CPU initialization period.
func testPods(requests []string, ready []bool, phases []corev1.PodPhase) []*corev1.Pod {
	var pods []*corev1.Pod
	start := metav1.NewTime(calcNow.Add(-time.Hour))
	for i, req := range requests {
		status, transition := corev1.ConditionTrue, metav1.NewTime(calcNow.Add(-50*time.Minute))
		if ready != nil && !ready[i] {
			status, transition = corev1.ConditionFalse, start // never became ready
		}
		phase := corev1.PodRunning
		if phases != nil {
			phase = phases[i]
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i), Namespace: "default"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
			Status: corev1.PodStatus{Phase: phase, StartTime: &start, Conditions: []corev1.PodCondition{{
				Type: corev1.PodReady, Status: status, LastTransitionTime: transition,
			}}},
		}
		if req != "" {
			pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(req)}
		}
		pods = append(pods, pod)
	}
	return pods
}

// testMetrics gives pod-i the i-th level in millicores; -1 leaves it
// without a metric.
func testMetrics(levels []int64) map[string]podMetric {
	m := map[string]podMetric{}
	for i, v := range levels {
		if v >= 0 {
			m[fmt.Sprintf("pod-%d", i)] = podMetric{value: v, timestamp: calcNow, window: 30 * time.Second}
		}
	}
	return m
}

func newCalc() *replicaCalculator {
	return &replicaCalculator{tolerance: defaultTolerance, cpuInitializationPeriod: 5 * time.Minute,
		delayOfInitialReadinessStatus: 30 * time.Second, now: func() time.Time { return calcNow }}
}

// The cases are those of upstream's replica_calculator_test.go, by name,
// with their numbers.
func TestUtilizationReplicas(t *testing.T) {
	tests := []struct {
		name            string
		current         int32
		target          int32
		requests        []string
		ready           []bool
		phases          []corev1.PodPhase
		levels          []int64
		want            int32
		wantUtilization int32
		wantErr         string
	}{
		{name: "ScaleUp", current: 3, target: 30, requests: []string{"1", "1", "1"}, levels: []int64{300, 500, 700}, want: 5, wantUtilization: 50},
		{name: "ScaleDown", current: 5, target: 50, requests: []string{"1", "1", "1", "1", "1"}, levels: []int64{100, 300, 500, 250, 250}, want: 3, wantUtilization: 28},
		{name: "Tolerance", current: 3, target: 100, requests: []string{"0.9", "1", "1.1"}, levels: []int64{1010, 1030, 1020}, want: 3, wantUtilization: 102},
		{name: "ScaleUpUnreadyLessScale", current: 3, target: 30, requests: []string{"1", "1", "1"}, ready: []bool{false, true, true}, levels: []int64{300, 500, 700}, want: 4, wantUtilization: 60},
		{name: "ScaleUpIgnoresFailedPods", current: 2, target: 30, requests: []string{"1", "1", "1", "1"},
			phases: []corev1.PodPhase{corev1.PodRunning, corev1.PodRunning, corev1.PodFailed, corev1.PodFailed}, levels: []int64{500, 700, 100, 100}, want: 4, wantUtilization: 60},
		{name: "ScaleUpPendingLessScale", current: 3, target: 30, requests: []string{"1", "1", "1"},
			phases: []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodRunning}, levels: []int64{300, 500, 700}, want: 4, wantUtilization: 60},
		{name: "MissingMetricsNoChangeGt", current: 2, target: 100, requests: []string{"1", "1"}, levels: []int64{1900, -1}, want: 2, wantUtilization: 190},
		{name: "MissingMetricsNoChangeLt", current: 2, target: 100, requests: []string{"1", "1"}, levels: []int64{600, -1}, want: 2, wantUtilization: 60},
		{name: "MissingMetricsScaleUp", current: 3, target: 100, requests: []string{"1", "1", "1"}, levels: []int64{2000, 2000, -1}, want: 4, wantUtilization: 200},
		{name: "MissingMetricsScaleDown", current: 4, target: 50, requests: []string{"1", "1", "1", "1"}, levels: []int64{100, 100, 100, -1}, want: 3, wantUtilization: 10},
		{name: "SuperfluousMetrics", current: 4, target: 100, requests: []string{"1", "1", "1", "1"}, levels: []int64{4000, 9500, 3000, 7000}, want: 24, wantUtilization: 587},
		{name: "EmptyMetrics", current: 4, target: 100, requests: []string{"1", "1", "1", "1"}, levels: []int64{-1, -1, -1, -1}, wantErr: errNoPodMetrics.Error()},
		{name: "NoPods", current: 3, target: 100, wantErr: errNoPods.Error()},
		{name: "MissingRequest", current: 1, target: 50, requests: []string{""}, levels: []int64{100}, wantErr: "missing request for cpu in container app of Pod pod-0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods := testPods(tt.requests, tt.ready, tt.phases)
			got, utilization, _, err := newCalc().utilizationReplicas(tt.current, tt.target, corev1.ResourceCPU, testMetrics(tt.levels), pods)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want || utilization != tt.wantUtilization {
				t.Errorf("replicas, utilization = %d, %d%%; want %d, %d%%", got, utilization, tt.want, tt.wantUtilization)
			}
		})
	}
}

func TestAverageValueReplicas(t *testing.T) {
	tests := []struct {
		name    string
		current int32
		target  int64
		levels  []int64
		want    int32
	}{
		{name: "ScaleUp", current: 3, target: 250, levels: []int64{300, 500, 700}, want: 6},
		{name: "ScaleDown", current: 5, target: 400, levels: []int64{100, 300, 500, 250, 250}, want: 4},
		{name: "Tolerance", current: 3, target: 500, levels: []int64{510, 520, 500}, want: 3},
		{name: "MissingScaleDownHoldsAtTarget", current: 3, target: 500, levels: []int64{100, 100, -1}, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reqs := make([]string, len(tt.levels))
			for i := range reqs {
				reqs[i] = "1"
			}
			got, _, err := newCalc().averageValueReplicas(tt.current, tt.target, corev1.ResourceCPU, testMetrics(tt.levels), testPods(reqs, nil, nil))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("replicas = %d, want %d", got, tt.want)
			}
		})
	}
}
