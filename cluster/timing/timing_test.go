package timing

import (
	"testing"
	"time"
)

func TestScale(t *testing.T) {
	tests := []struct {
		name  string
		speed Speed
		in    time.Duration
		want  time.Duration
	}{
		{"unset is real time", 0, NodeMonitorGracePeriod, 50 * time.Second},
		{"one is real time", 1, LeaseDuration, 15 * time.Second},
		{"ten", 10, NodeMonitorGracePeriod, 5 * time.Second},
		{"fractional", 2.5, RetryPeriod, 800 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.speed.Scale(tt.in); got != tt.want {
				t.Errorf("Speed(%v).Scale(%v) = %v, want %v", tt.speed, tt.in, got, tt.want)
			}
		})
	}
}

func TestTableScalesEveryRow(t *testing.T) {
	for _, r := range Speed(10).Table() {
		if r.Lab*10 != r.Upstream {
			t.Errorf("%s: lab %v is not upstream %v / 10", r.Name, r.Lab, r.Upstream)
		}
	}
}
