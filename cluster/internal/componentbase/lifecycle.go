package componentbase

import (
	"errors"
	"sync"
)

var (
	// ErrStarted is Begin's error for a component started before.
	ErrStarted = errors.New("already started")
	// ErrStopped is Begin's error for a component stopped before it was
	// started.
	ErrStopped = errors.New("already stopped")
)

// Lifecycle is a component's life: it starts once, and stops once, when
// its owner stops it gracefully (Stop) or at once, as kill -9 would
// (Kill), or by itself when it cannot go on (Fail). Done closes once the
// component's shutdown has returned, and Err keeps why it stopped by
// itself. Embedded in a component, it gives it Stop, Kill, Done and Err;
// the component writes only its shutdown.
type Lifecycle struct {
	shutdown func(graceful bool)

	mu       sync.Mutex
	started  bool
	stopping bool
	err      error
	wg       sync.WaitGroup // the goroutines of Go
	quit     chan struct{}  // closed as stopping begins
	once     sync.Once
	done     chan struct{}
}

// NewLifecycle returns the lifecycle of a component whose shutdown stops
// everything it runs, gracefully or not. Shutdown runs once, for the first
// of Stop, Kill and Fail, also when the component never started (Started
// tells) or started only in part.
func NewLifecycle(shutdown func(graceful bool)) *Lifecycle {
	return &Lifecycle{shutdown: shutdown, quit: make(chan struct{}), done: make(chan struct{})}
}

// Begin marks the component started. It fails with ErrStarted or
// ErrStopped when it was started or stopped before; the caller wraps the
// error with its name.
func (l *Lifecycle) Begin() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.started:
		return ErrStarted
	case l.stopping:
		return ErrStopped
	}
	l.started = true
	return nil
}

// Started reports whether Begin succeeded.
func (l *Lifecycle) Started() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.started
}

// Stopping reports whether the component has begun to stop.
func (l *Lifecycle) Stopping() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stopping
}

// Quit is closed as the component begins to stop, before its shutdown
// runs: what its long requests (event streams) end on, so that a
// graceful shutdown need not wait for them.
func (l *Lifecycle) Quit() <-chan struct{} { return l.quit }

// Go runs fn on a goroutine that Wait waits for, unless the component is
// stopping; it reports whether fn runs.
func (l *Lifecycle) Go(fn func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopping {
		return false
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		fn()
	}()
	return true
}

// Wait waits for the goroutines of Go to return. A shutdown calls it once
// it has told them to.
func (l *Lifecycle) Wait() { l.wg.Wait() }

// Stop stops the component gracefully and waits until it has stopped. It
// returns Err: why the component had stopped by itself before, if it had.
func (l *Lifecycle) Stop() error {
	l.end(true)
	return l.Err()
}

// Kill stops the component at once, as kill -9 would, and waits until it
// has stopped.
func (l *Lifecycle) Kill() { l.end(false) }

// Fail stops the component because it cannot go on, as a process that
// crashes: err is kept for Err, unless the owner began to stop it first.
// It returns at once, since it is usually called from one of the
// goroutines the shutdown waits for.
func (l *Lifecycle) Fail(err error) {
	l.mu.Lock()
	if !l.stopping {
		l.err = err
		l.beginStop()
	}
	l.mu.Unlock()
	go l.end(false)
}

// Done is closed once the component has stopped, for whatever reason.
func (l *Lifecycle) Done() <-chan struct{} { return l.done }

// Err returns why the component stopped by itself (Fail); nil while it
// runs, and after Stop or Kill.
func (l *Lifecycle) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// end runs the shutdown once; later calls wait for the first to finish.
func (l *Lifecycle) end(graceful bool) {
	l.mu.Lock()
	l.beginStop()
	l.mu.Unlock()
	l.once.Do(func() {
		l.shutdown(graceful)
		close(l.done)
	})
	<-l.done
}

// beginStop marks the component stopping, once; l.mu is held.
func (l *Lifecycle) beginStop() {
	if !l.stopping {
		l.stopping = true
		close(l.quit)
	}
}
