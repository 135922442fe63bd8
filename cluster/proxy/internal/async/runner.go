// Package async holds kube-proxy's sync runner: upstream's
// BoundedFrequencyRunner (pkg/util/async), which turns a stream of "something
// changed" signals into rule syncs that are neither too frequent nor too
// rare.
package async

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// minRetry keeps the loop from spinning when the limiter's arithmetic says a
// token is a hair short of due.
const minRetry = time.Millisecond

// BoundedFrequencyRunner runs a function when asked to, under two bounds:
//
//   - at most burstRuns runs back to back, then at most one per minInterval
//     (a token bucket of burstRuns tokens refilled once per minInterval);
//     requests in between are folded into one run when the bucket allows;
//   - at least one run per maxInterval, asked for or not.
//
// The function always runs on the goroutine that called Loop, so two runs
// never overlap.
type BoundedFrequencyRunner struct {
	name  string
	fn    func()
	burst int

	// run holds one pending request; changed one pending interval change.
	run     chan struct{}
	changed chan struct{}

	mu          sync.Mutex
	minInterval time.Duration
	maxInterval time.Duration
	limiter     *rate.Limiter // nil when minInterval is zero: no bound

	// Owned by the Loop goroutine.
	lastRun time.Time
	pending bool // a request was refused by the limiter and waits for a token
}

// NewBoundedFrequencyRunner returns a runner for fn. name is for logs;
// minInterval may be zero (no lower bound); burstRuns below 1 means 1.
func NewBoundedFrequencyRunner(name string, fn func(), minInterval, maxInterval time.Duration, burstRuns int) *BoundedFrequencyRunner {
	if burstRuns < 1 {
		burstRuns = 1
	}
	r := &BoundedFrequencyRunner{
		name:    name,
		fn:      fn,
		burst:   burstRuns,
		run:     make(chan struct{}, 1),
		changed: make(chan struct{}, 1),
	}
	r.setIntervals(minInterval, maxInterval)
	return r
}

// Name returns the name the runner was given.
func (r *BoundedFrequencyRunner) Name() string { return r.name }

// Run asks for a run as soon as the bounds allow. It never blocks; requests
// made while one is pending are the same request.
func (r *BoundedFrequencyRunner) Run() {
	select {
	case r.run <- struct{}{}:
	default:
	}
}

// SetIntervals changes both bounds. The token bucket starts full again, as a
// freshly started kube-proxy's would.
func (r *BoundedFrequencyRunner) SetIntervals(minInterval, maxInterval time.Duration) {
	r.setIntervals(minInterval, maxInterval)
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *BoundedFrequencyRunner) setIntervals(minInterval, maxInterval time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.minInterval, r.maxInterval = minInterval, maxInterval
	r.limiter = nil
	if minInterval > 0 {
		r.limiter = rate.NewLimiter(rate.Every(minInterval), r.burst)
	}
}

// Intervals returns the current bounds.
func (r *BoundedFrequencyRunner) Intervals() (minInterval, maxInterval time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.minInterval, r.maxInterval
}

// Loop runs fn as the bounds allow until stop is closed. The first periodic
// run comes maxInterval after Loop starts.
func (r *BoundedFrequencyRunner) Loop(stop <-chan struct{}) {
	r.lastRun = time.Now()
	_, maxInterval := r.Intervals()
	timer := time.NewTimer(maxInterval)
	defer timer.Stop()
	for {
		var next time.Duration
		select {
		case <-stop:
			return
		case <-r.run:
			next = r.tryRun()
		case <-timer.C:
			// Either the periodic run is due or a refused request's token
			// is; both are worth a try.
			next = r.tryRun()
		case <-r.changed:
			if r.pending {
				next = r.tryRun()
			} else {
				next = r.untilPeriodic(time.Now())
			}
		}
		timer.Reset(next)
	}
}

// tryRun runs fn if the limiter allows and returns how long to wait before
// the timer should fire again: the full maxInterval after a run; otherwise
// until the next token or the periodic run, whichever is sooner.
func (r *BoundedFrequencyRunner) tryRun() time.Duration {
	now := time.Now()
	r.mu.Lock()
	limiter, minInterval, maxInterval := r.limiter, r.minInterval, r.maxInterval
	r.mu.Unlock()
	if limiter == nil || limiter.AllowN(now, 1) {
		r.pending = false
		r.fn()
		r.lastRun = time.Now()
		return maxInterval
	}
	r.pending = true
	wait := time.Duration((1 - limiter.TokensAt(now)) * float64(minInterval))
	if periodic := r.untilPeriodic(now); periodic < wait {
		wait = periodic
	}
	return max(wait, minRetry)
}

// untilPeriodic returns the time left before the periodic run is due.
func (r *BoundedFrequencyRunner) untilPeriodic(now time.Time) time.Duration {
	_, maxInterval := r.Intervals()
	return max(maxInterval-now.Sub(r.lastRun), 0)
}
