package nodelifecycle

import (
	"sort"
	"sync"
	"time"

	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
)

// evictionRateLimiterBurst is how many nodes may be tainted at once before
// the rate applies (upstream's EvictionRateLimiterBurst).
const evictionRateLimiterBurst = 1

// timedValue is a node waiting in a taint queue.
type timedValue struct {
	value string
	// uid tells a node apart from a later node of the same name.
	uid       string
	addedAt   time.Time
	processAt time.Time
}

// rateLimitedTimedQueue holds the nodes of one zone waiting for a
// NoExecute taint, oldest first, and lets them out no faster than its rate
// limiter allows (upstream's RateLimitedTimedQueue).
type rateLimitedTimedQueue struct {
	clock clock.PassiveClock

	mu      sync.Mutex
	items   []timedValue
	limiter flowcontrol.PassiveRateLimiter
	qps     float32
}

func newRateLimitedTimedQueue(c clock.PassiveClock, qps float32) *rateLimitedTimedQueue {
	return &rateLimitedTimedQueue{clock: c, limiter: newLimiter(c, qps), qps: qps}
}

func newLimiter(c clock.PassiveClock, qps float32) flowcontrol.PassiveRateLimiter {
	if qps <= 0 {
		return flowcontrol.NewFakeNeverRateLimiter()
	}
	return flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(qps, evictionRateLimiterBurst, c)
}

// add queues a node; it reports false if the node is queued already.
func (q *rateLimitedTimedQueue) add(value, uid string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, it := range q.items {
		if it.value == value {
			return false
		}
	}
	now := q.clock.Now()
	q.items = append(q.items, timedValue{value: value, uid: uid, addedAt: now, processAt: now})
	return true
}

// remove takes a node out of the queue; it reports whether it was there.
func (q *rateLimitedTimedQueue) remove(value string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, it := range q.items {
		if it.value == value {
			q.items = append(q.items[:i], q.items[i+1:]...)
			return true
		}
	}
	return false
}

// len returns how many nodes wait.
func (q *rateLimitedTimedQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// try hands due nodes to fn, one per token of the rate limiter. fn returns
// true when it is done with a node, or false and how long to wait before
// the node's next turn. fn runs without the queue's lock held, so nodes
// can be queued and removed while it talks to the API server.
func (q *rateLimitedTimedQueue) try(fn func(timedValue) (bool, time.Duration)) {
	for {
		q.mu.Lock()
		if len(q.items) == 0 || !q.limiter.TryAccept() {
			// Empty, or no token: the next pass tries again.
			q.mu.Unlock()
			return
		}
		head := q.items[0]
		now := q.clock.Now()
		if now.Before(head.processAt) {
			q.mu.Unlock()
			return
		}
		q.items = q.items[1:]
		q.mu.Unlock()

		if ok, wait := fn(head); !ok {
			head.processAt = now.Add(wait + 1)
			q.mu.Lock()
			q.items = append(q.items, head)
			sort.SliceStable(q.items, func(i, j int) bool { return q.items[i].processAt.Before(q.items[j].processAt) })
			q.mu.Unlock()
		}
	}
}

// swapLimiter changes the rate; zero or less stops the queue. A limiter
// with no token left hands its debt to the new one, so that a rate change
// is not a free token.
func (q *rateLimitedTimedQueue) swapLimiter(qps float32) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.qps == qps {
		return
	}
	limiter := newLimiter(q.clock, qps)
	if qps > 0 && !q.limiter.TryAccept() {
		limiter.TryAccept()
	}
	q.limiter.Stop()
	q.limiter, q.qps = limiter, qps
}
