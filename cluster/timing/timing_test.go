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
	for _, r := range Speed(4).Table() {
		if r.Lab*4 != r.Upstream {
			t.Errorf("%s: lab %v is not upstream %v / 4", r.Name, r.Lab, r.Upstream)
		}
	}
	// Past the leader-election floor the table shows the floor, not the
	// quotient: it says what the components run with.
	lease, renew, retry := Speed(10).LeaderElection()
	for _, r := range Speed(10).Table() {
		want := map[string]time.Duration{
			"leader-elect-lease-duration": lease,
			"leader-elect-renew-deadline": renew,
			"leader-elect-retry-period":   retry,
		}
		w, ok := want[r.Name]
		if !ok {
			w = r.Upstream / 10
		}
		if r.Lab != w {
			t.Errorf("speed 10, %s: lab %v, want %v", r.Name, r.Lab, w)
		}
	}
}

func TestLeaderElection(t *testing.T) {
	for _, tc := range []struct {
		speed               Speed
		lease, renew, retry time.Duration
	}{
		{speed: 0, lease: 15 * time.Second, renew: 10 * time.Second, retry: 2 * time.Second},
		{speed: 1, lease: 15 * time.Second, renew: 10 * time.Second, retry: 2 * time.Second},
		{speed: 3, lease: 5 * time.Second, renew: 10 * time.Second / 3, retry: 2 * time.Second / 3},
		// At the floor exactly, then past it: upstream's 15:10:2 around
		// a 3 s lease, so a renewal has 2 s and a loaded machine does not
		// make the leader step down.
		{speed: 5, lease: 3 * time.Second, renew: 2 * time.Second, retry: 400 * time.Millisecond},
		{speed: 10, lease: 3 * time.Second, renew: 2 * time.Second, retry: 400 * time.Millisecond},
		{speed: 60, lease: 3 * time.Second, renew: 2 * time.Second, retry: 400 * time.Millisecond},
	} {
		lease, renew, retry := tc.speed.LeaderElection()
		if lease != tc.lease || renew != tc.renew || retry != tc.retry {
			t.Errorf("speed %v: %v/%v/%v, want %v/%v/%v", tc.speed, lease, renew, retry, tc.lease, tc.renew, tc.retry)
		}
	}
}
