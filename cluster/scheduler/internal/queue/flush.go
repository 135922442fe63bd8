package queue

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Run moves pods whose backoff ran out to activeQ and gives pods that sat
// in unschedulablePods for the maximum time another try, until ctx ends.
//
// Upstream polls for both (every second, and every 30 seconds); klab
// sleeps until the next deadline instead, so an idle lab costs nothing
// and a backoff ends when it says it does.
func (q *PriorityQueue) Run(ctx context.Context) {
	for {
		q.mu.Lock()
		next := q.nextDeadline()
		q.mu.Unlock()
		var (
			fire  <-chan time.Time
			timer clock.Timer
		)
		if !next.IsZero() {
			timer = q.clock.NewTimer(next.Sub(q.clock.Now()))
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-q.kick:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
		q.flush()
	}
}

// nextDeadline is the earliest time something must move. Callers hold mu.
func (q *PriorityQueue) nextDeadline() time.Time {
	next := q.unschedulableDeadline
	if p := q.podBackoffQ.peek(); p != nil && (next.IsZero() || p.backoffExpires.Before(next)) {
		next = p.backoffExpires
	}
	return next
}

// flush moves every pod that is due.
func (q *PriorityQueue) flush() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	for p := q.podBackoffQ.peek(); p != nil && !p.backoffExpires.After(now); p = q.podBackoffQ.peek() {
		q.podBackoffQ.pop()
		q.addActive(p)
	}
	if q.unschedulableDeadline.IsZero() || now.Before(q.unschedulableDeadline) {
		return
	}
	var oldest time.Time
	for _, p := range q.unschedulablePods {
		if !now.Before(p.Timestamp.Add(q.timings.MaxInUnschedulable)) {
			q.move(p)
		} else if oldest.IsZero() || p.Timestamp.Before(oldest) {
			oldest = p.Timestamp
		}
	}
	q.unschedulableDeadline = time.Time{}
	if !oldest.IsZero() {
		q.unschedulableDeadline = oldest.Add(q.timings.MaxInUnschedulable)
	}
}
