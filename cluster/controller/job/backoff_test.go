package job

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestBackoffRemainingTime(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(now)
	tests := []struct {
		failures int32
		ago      time.Duration
		want     time.Duration
	}{
		{0, 0, 0},
		{1, 4 * time.Second, 6 * time.Second},
		{3, 0, 40 * time.Second},
		{10, time.Minute, 5 * time.Minute}, // capped at 6 minutes
		{2, time.Minute, 0},
	}
	for _, tt := range tests {
		last := now.Add(-tt.ago)
		r := backoffRecord{failuresAfterLastSuccess: tt.failures, lastFailureTime: &last}
		if got := r.remainingTime(clk, DefaultJobPodFailureBackOff, MaxJobPodFailureBackOff); got != tt.want {
			t.Errorf("%d failures, last %v ago: remaining %v, want %v", tt.failures, tt.ago, got, tt.want)
		}
	}
}
