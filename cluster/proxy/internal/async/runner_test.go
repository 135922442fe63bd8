package async

import (
	"sync"
	"testing"
	"time"
)

// recorder is a run function that reports each run's time.
type recorder struct {
	mu   sync.Mutex
	runs []time.Time
	ran  chan struct{}
}

func newRecorder() *recorder { return &recorder{ran: make(chan struct{}, 1000)} }

func (r *recorder) fn() {
	r.mu.Lock()
	r.runs = append(r.runs, time.Now())
	r.mu.Unlock()
	r.ran <- struct{}{}
}

func (r *recorder) times() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.runs...)
}

func (r *recorder) await(t *testing.T, within time.Duration) time.Time {
	t.Helper()
	select {
	case <-r.ran:
	case <-time.After(within):
		t.Fatalf("no run within %v", within)
	}
	runs := r.times()
	return runs[len(runs)-1]
}

func start(t *testing.T, r *BoundedFrequencyRunner) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Loop(stop)
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
	})
}

func TestBurstThenMinInterval(t *testing.T) {
	const minInterval = 100 * time.Millisecond
	rec := newRecorder()
	r := NewBoundedFrequencyRunner("test", rec.fn, minInterval, time.Hour, 2)
	start(t, r)

	// The bucket starts with two tokens: two requests run at once.
	begin := time.Now()
	r.Run()
	rec.await(t, time.Second)
	r.Run()
	second := rec.await(t, time.Second)
	if d := second.Sub(begin); d > minInterval/2 {
		t.Errorf("second run of the burst came after %v; want it at once", d)
	}
	// The third waits for a token.
	r.Run()
	third := rec.await(t, time.Second)
	if d := third.Sub(second); d < minInterval*9/10 {
		t.Errorf("third run came %v after the second; want at least about %v", d, minInterval)
	}
}

func TestRequestsFoldIntoFewRuns(t *testing.T) {
	const minInterval = 50 * time.Millisecond
	rec := newRecorder()
	r := NewBoundedFrequencyRunner("test", rec.fn, minInterval, time.Hour, 2)
	start(t, r)

	const requests = 200
	begin := time.Now()
	for i := 0; i < requests; i++ {
		r.Run()
		time.Sleep(time.Millisecond) // the requests are spread over the window being measured
	}
	lastRequest := time.Now()
	// The last request is honoured: a run follows it.
	for {
		if last := rec.await(t, time.Second); !last.Before(lastRequest) {
			break
		}
	}
	window := time.Since(begin)
	runs := len(rec.times())
	bound := 2 + int(window/minInterval) + 1
	if runs > bound {
		t.Errorf("%d requests over %v gave %d runs; want at most %d (burst 2 + one per %v)", requests, window, runs, bound, minInterval)
	}
	if runs >= requests/4 {
		t.Errorf("%d requests gave %d runs; want far fewer", requests, runs)
	}
}

func TestPeriodicRun(t *testing.T) {
	const maxInterval = 80 * time.Millisecond
	rec := newRecorder()
	r := NewBoundedFrequencyRunner("test", rec.fn, 10*time.Millisecond, maxInterval, 2)
	begin := time.Now()
	start(t, r)
	first := rec.await(t, time.Second)
	if d := first.Sub(begin); d < maxInterval*9/10 {
		t.Errorf("periodic run after %v; want about %v", d, maxInterval)
	}
	second := rec.await(t, time.Second)
	if d := second.Sub(first); d < maxInterval*9/10 {
		t.Errorf("runs %v apart without requests; want about %v", d, maxInterval)
	}
}

func TestSetIntervalsKeepsRefusedRequest(t *testing.T) {
	rec := newRecorder()
	r := NewBoundedFrequencyRunner("test", rec.fn, time.Hour, time.Hour, 1)
	start(t, r)
	r.Run()
	rec.await(t, time.Second)
	r.Run() // refused: the next token is an hour away
	select {
	case <-rec.ran:
		t.Fatal("a second run within the hour")
	case <-time.After(50 * time.Millisecond):
	}
	// Shorter bounds: the waiting request runs at once with a fresh bucket.
	r.SetIntervals(10*time.Millisecond, time.Hour)
	rec.await(t, time.Second)
	if got, _ := r.Intervals(); got != 10*time.Millisecond {
		t.Errorf("Intervals() min = %v, want 10ms", got)
	}
}
