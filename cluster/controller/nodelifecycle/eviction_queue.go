package nodelifecycle

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// scheduledEviction is a pod deletion waiting for its time.
type scheduledEviction struct {
	createdAt time.Time
	fireAt    time.Time
	timer     clock.Timer
}

// evictionSchedule holds the pod deletions the taint eviction controller
// has decided on, keyed by "namespace/name" (upstream's TimedWorkerQueue).
// When a deletion is due, fire is called with its key; it must not block.
//
// A key whose deletion already fired stays in the schedule, without a
// timer, until cancel removes it (the pod is gone, or its node's taints
// changed): that keeps a pod that lingers while it terminates from being
// scheduled for deletion over and over.
type evictionSchedule struct {
	clock clock.WithDelayedExecution
	fire  func(key string)

	mu        sync.Mutex
	scheduled map[string]*scheduledEviction
}

func newEvictionSchedule(c clock.WithDelayedExecution, fire func(string)) *evictionSchedule {
	return &evictionSchedule{clock: c, fire: fire, scheduled: map[string]*scheduledEviction{}}
}

// add schedules key for fireAt unless it is scheduled (or done) already.
// It reports whether it scheduled anything.
func (s *evictionSchedule) add(key string, createdAt, fireAt time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, exists := s.scheduled[key]; exists {
		return false
	}
	e := &scheduledEviction{createdAt: createdAt, fireAt: fireAt}
	delay := fireAt.Sub(s.clock.Now())
	if delay <= 0 {
		s.scheduled[key] = e
		s.fire(key)
		return true
	}
	// fire runs on the clock's goroutine (the fake clock's Step in
	// tests): it only queues the key.
	e.timer = s.clock.AfterFunc(delay, func() { s.fire(key) })
	s.scheduled[key] = e
	return true
}

// get returns when key's pending deletion was scheduled, if it has one.
func (s *evictionSchedule) get(key string) (createdAt time.Time, pending bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.scheduled[key]; e != nil {
		return e.createdAt, true
	}
	return time.Time{}, false
}

// cancel forgets key. It reports whether a deletion was still pending
// (scheduled and not yet fired or carried out).
func (s *evictionSchedule) cancel(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, found := s.scheduled[key]
	if !found {
		return false
	}
	delete(s.scheduled, key)
	if e == nil {
		return false
	}
	if e.timer != nil {
		e.timer.Stop()
	}
	return true
}

// isPending reports whether key is still meant to be deleted: a fired
// key that was cancelled before a worker got to it is not.
func (s *evictionSchedule) isPending(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scheduled[key] != nil
}

// finish records the outcome of a deletion: done keeps the key (see the
// type's comment), failed forgets it so that the next update of the pod
// or its node can schedule it again.
func (s *evictionSchedule) finish(key string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, found := s.scheduled[key]; !found {
		return
	}
	if ok {
		s.scheduled[key] = nil
	} else {
		delete(s.scheduled, key)
	}
}

// len returns how many deletions are pending.
func (s *evictionSchedule) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.scheduled {
		if e != nil {
			n++
		}
	}
	return n
}
