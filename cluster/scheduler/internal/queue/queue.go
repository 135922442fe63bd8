// Package queue holds the pods waiting to be scheduled, after upstream's
// PriorityQueue. A pending pod is in exactly one of three places:
//
//   - activeQ: ready to be tried, highest .spec.priority first, then the
//     pod that has waited longest. The scheduling loop pops from here.
//   - podBackoffQ: it failed recently and waits out its backoff, which
//     starts at the initial backoff and doubles with every attempt up to
//     the maximum; then it moves to activeQ.
//   - unschedulablePods: no node fitted it. It waits for a cluster event
//     that could change that (a node added, a node's labels or taints or
//     allocatable changed, a bound pod deleted...), or, failing that, for
//     the maximum time a pod may sit there; then it moves to activeQ, or to
//     podBackoffQ if its backoff has not run out yet.
//
// A pod that failed while a cluster event arrived during its scheduling
// cycle goes to podBackoffQ rather than unschedulablePods, so that it does
// not miss the event that may have made it fit (upstream's
// moveRequestCycle).
package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// ErrClosed is returned by Pop once the queue is closed.
var ErrClosed = errors.New("scheduling queue is closed")

// QueuedPodInfo is a pod in the queue and its scheduling history.
type QueuedPodInfo struct {
	Pod *v1.Pod
	// Timestamp is when the pod was last added to the queue; after a
	// failure, when it failed.
	Timestamp time.Time
	// Attempts counts the scheduling attempts (pops).
	Attempts int
	// InitialAttemptTimestamp is when the pod was first popped.
	InitialAttemptTimestamp time.Time
	// UnschedulablePlugins are the plugins that rejected the pod in its
	// last attempt; empty when the attempt failed with an error, which
	// sends the pod to backoff instead of unschedulablePods.
	UnschedulablePlugins []string

	key            string
	backoffExpires time.Time
}

// Key returns the pod's queue key, namespace/name.
func Key(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }

// Timings are the queue's durations, already scaled by the lab's speed.
type Timings struct {
	InitialBackoff     time.Duration
	MaxBackoff         time.Duration
	MaxInUnschedulable time.Duration
}

// PriorityQueue is the scheduling queue. It is safe for concurrent use.
type PriorityQueue struct {
	clock   clock.Clock
	timings Timings

	mu                sync.Mutex
	activeQ           *podHeap
	podBackoffQ       *podHeap
	unschedulablePods map[string]*QueuedPodInfo
	// unschedulableDeadline is when the oldest pod in unschedulablePods
	// (or an earlier one since removed) has waited long enough; zero when
	// none waits.
	unschedulableDeadline time.Time
	// schedulingCycle counts pops; moveRequestCycle is the cycle during
	// which the last cluster event moved pods.
	schedulingCycle  int64
	moveRequestCycle int64
	closed           bool
	// activeSignal is closed (and replaced) whenever activeQ gains a pod.
	activeSignal chan struct{}
	// kick wakes the flush loop when a deadline may have moved earlier.
	kick chan struct{}
}

// New returns an empty queue with the given timings, on the real clock
// unless c is non-nil.
func New(t Timings, c clock.Clock) *PriorityQueue {
	if c == nil {
		c = clock.RealClock{}
	}
	return &PriorityQueue{
		clock:   c,
		timings: t,
		activeQ: newPodHeap(func(a, b *QueuedPodInfo) bool {
			// Upstream's PrioritySort: higher priority first, then the
			// pod queued earlier.
			pa, pb := podPriority(a.Pod), podPriority(b.Pod)
			return pa > pb || (pa == pb && a.Timestamp.Before(b.Timestamp))
		}),
		podBackoffQ: newPodHeap(func(a, b *QueuedPodInfo) bool {
			return a.backoffExpires.Before(b.backoffExpires)
		}),
		unschedulablePods: make(map[string]*QueuedPodInfo),
		activeSignal:      make(chan struct{}),
		kick:              make(chan struct{}, 1),
		moveRequestCycle:  -1,
	}
}

// podPriority is the pod's .spec.priority, 0 when unset.
func podPriority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// BackoffDuration is the backoff after attempts failed attempts: none
// before the first attempt, then the initial backoff doubling up to the
// maximum.
func (q *PriorityQueue) BackoffDuration(attempts int) time.Duration {
	if attempts == 0 {
		return 0
	}
	d := q.timings.InitialBackoff
	for i := 1; i < attempts; i++ {
		if d > q.timings.MaxBackoff-d {
			return q.timings.MaxBackoff
		}
		d += d
	}
	return d
}

// Add queues a new pending pod in activeQ.
func (q *PriorityQueue) Add(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	p := &QueuedPodInfo{Pod: pod, Timestamp: q.clock.Now(), key: Key(pod)}
	q.podBackoffQ.delete(p.key)
	delete(q.unschedulablePods, p.key)
	q.addActive(p)
}

// Update replaces a queued pod. A pod waiting in unschedulablePods whose
// spec or metadata changed is given another try; one the queue does not
// know (it is being scheduled right now, say) is added to activeQ.
func (q *PriorityQueue) Update(oldPod, newPod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	key := Key(newPod)
	if p, ok := q.activeQ.get(key); ok {
		p.Pod = newPod
		q.activeQ.add(p)
		return
	}
	if p, ok := q.podBackoffQ.get(key); ok {
		p.Pod = newPod
		return
	}
	if p, ok := q.unschedulablePods[key]; ok {
		p.Pod = newPod
		if podUpdated(oldPod, newPod) {
			q.move(p)
		}
		return
	}
	q.addActive(&QueuedPodInfo{Pod: newPod, Timestamp: q.clock.Now(), key: key})
}

// Delete removes a pod from the queue.
func (q *PriorityQueue) Delete(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := Key(pod)
	q.activeQ.delete(key)
	q.podBackoffQ.delete(key)
	delete(q.unschedulablePods, key)
}

// Pop returns the next pod of activeQ, waiting for one if it is empty. It
// fails when ctx ends or the queue is closed.
func (q *PriorityQueue) Pop(ctx context.Context) (*QueuedPodInfo, error) {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return nil, ErrClosed
		}
		if p := q.activeQ.pop(); p != nil {
			q.schedulingCycle++
			p.Attempts++
			if p.InitialAttemptTimestamp.IsZero() {
				p.InitialAttemptTimestamp = q.clock.Now()
			}
			q.mu.Unlock()
			return p, nil
		}
		signal := q.activeSignal
		q.mu.Unlock()
		select {
		case <-signal:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// SchedulingCycle returns the number of pods popped so far; a failed pod
// is handed back with the cycle current when it was popped.
func (q *PriorityQueue) SchedulingCycle() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.schedulingCycle
}

// AddUnschedulableIfNotPresent hands back a pod whose attempt (in
// podSchedulingCycle) failed. A pod rejected by plugins waits in
// unschedulablePods, unless a cluster event arrived since it was popped;
// a pod that failed with an error (no UnschedulablePlugins) or that may
// have missed an event waits out its backoff in podBackoffQ.
func (q *PriorityQueue) AddUnschedulableIfNotPresent(p *QueuedPodInfo, podSchedulingCycle int64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	p.key = Key(p.Pod)
	if _, ok := q.unschedulablePods[p.key]; ok {
		return fmt.Errorf("pod %v is already present in unschedulable queue", p.key)
	}
	if _, ok := q.activeQ.get(p.key); ok {
		return fmt.Errorf("pod %v is already present in the active queue", p.key)
	}
	if _, ok := q.podBackoffQ.get(p.key); ok {
		return fmt.Errorf("pod %v is already present in the backoff queue", p.key)
	}
	p.Timestamp = q.clock.Now()
	if len(p.UnschedulablePlugins) == 0 || q.moveRequestCycle >= podSchedulingCycle {
		q.addBackoff(p)
		return nil
	}
	q.unschedulablePods[p.key] = p
	if q.unschedulableDeadline.IsZero() {
		q.unschedulableDeadline = p.Timestamp.Add(q.timings.MaxInUnschedulable)
		q.wakeFlusher()
	}
	return nil
}

// Lengths returns how many pods wait in activeQ, podBackoffQ and
// unschedulablePods.
func (q *PriorityQueue) Lengths() (active, backoff, unschedulable int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.activeQ.Len(), q.podBackoffQ.Len(), len(q.unschedulablePods)
}

// Close wakes Pop, which then fails with ErrClosed; later calls do
// nothing.
func (q *PriorityQueue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.activeSignal)
	}
}

// addActive puts p in activeQ and wakes Pop. Callers hold mu.
func (q *PriorityQueue) addActive(p *QueuedPodInfo) {
	q.activeQ.add(p)
	close(q.activeSignal)
	q.activeSignal = make(chan struct{})
}

// addBackoff puts p in podBackoffQ until its backoff runs out. Callers
// hold mu.
func (q *PriorityQueue) addBackoff(p *QueuedPodInfo) {
	p.backoffExpires = p.Timestamp.Add(q.BackoffDuration(p.Attempts))
	q.podBackoffQ.add(p)
	if q.podBackoffQ.peek() == p {
		q.wakeFlusher()
	}
}

// move takes p out of unschedulablePods into podBackoffQ while it is
// still backing off, else into activeQ. Callers hold mu.
func (q *PriorityQueue) move(p *QueuedPodInfo) {
	delete(q.unschedulablePods, p.key)
	if q.clock.Now().Before(p.Timestamp.Add(q.BackoffDuration(p.Attempts))) {
		q.addBackoff(p)
		return
	}
	q.addActive(p)
}

func (q *PriorityQueue) wakeFlusher() {
	select {
	case q.kick <- struct{}{}:
	default:
	}
}
