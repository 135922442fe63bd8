package storage

import (
	"container/heap"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

// The dispatcher may wait for watchers whose input is full, but only from
// a time budget, as upstream's: at most maxDispatchBudget at once, refilled
// by dispatchBudgetPerSecond. A watcher still blocked when the budget runs
// out is closed, so one stuck client never holds the others back.
const (
	maxDispatchBudget       = 100 * time.Millisecond
	dispatchBudgetPerSecond = 50 * time.Millisecond
)

// dispatcherState is what only the dispatcher goroutine touches.
type dispatcherState struct {
	// lastRev is the revision every watcher has been sent all its events
	// up to: the revision a bookmark carries.
	lastRev    int64
	budget     *timeBudget
	candidates []*cacheWatcher
	blocked    []pendingSend
}

type pendingSend struct {
	w  *cacheWatcher
	ev watch.Event
}

// dispatchEvents hands every incoming event to the watchers it concerns,
// and bookmarks to the watchers whose bookmark is due.
func (c *cacher) dispatchEvents() {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case ev := <-c.incoming:
			if ev.typ != watch.Bookmark {
				c.dispatchEvent(ev)
			}
			c.lastRev = max(c.lastRev, ev.rev)
			continue
		case <-c.bookmarkWake:
		case <-timer.C:
			c.dispatchBookmarks(time.Now())
		}
		c.mu.Lock()
		due, ok := c.bookmarks.next()
		c.mu.Unlock()
		if ok {
			timer.Reset(time.Until(due))
		} else {
			timer.Stop()
		}
	}
}

// dispatchEvent sends ev to every watcher that selects it (in the shape
// its selectors see it: a change that takes an object out of a selector is
// a deletion for that watcher).
func (c *cacher) dispatchEvent(ev *watchCacheEvent) {
	c.mu.Lock()
	c.dispatching = true
	c.candidates = c.candidates[:0]
	for w := range c.unindexed {
		c.candidates = append(c.candidates, w)
	}
	for w := range c.indexed[ev.cur.index] {
		c.candidates = append(c.candidates, w)
	}
	if ev.prev != nil && ev.prev.index != ev.cur.index {
		for w := range c.indexed[ev.prev.index] {
			c.candidates = append(c.candidates, w)
		}
	}
	c.mu.Unlock()

	c.blocked = c.blocked[:0]
	for _, w := range c.candidates {
		if ev.rev <= w.startRev {
			continue // already in what the watcher started from
		}
		out, ok := w.transform(ev)
		if !ok {
			continue
		}
		select {
		case w.input <- out:
			w.lastSentRev = ev.rev
		default:
			c.blocked = append(c.blocked, pendingSend{w, out})
		}
	}
	if len(c.blocked) > 0 {
		c.waitForBlocked(ev.rev)
	}
	clear(c.candidates)

	c.mu.Lock()
	c.dispatching = false
	for _, w := range c.toStop {
		close(w.input)
	}
	c.toStop = nil
	c.mu.Unlock()
}

// waitForBlocked gives the watchers whose input was full the time left in
// the budget, together, then closes those still blocked.
func (c *cacher) waitForBlocked(rev int64) {
	started := time.Now()
	timeout := c.budget.takeAvailable()
	timer := time.NewTimer(timeout)
	fired := false
	for _, p := range c.blocked {
		if !fired {
			select {
			case p.w.input <- p.ev:
				p.w.lastSentRev = rev
				continue
			case <-p.w.done:
				continue
			case <-timer.C:
				fired = true
			}
		}
		select {
		case p.w.input <- p.ev:
			p.w.lastSentRev = rev
			continue
		default:
		}
		c.logger.Info("Forcing watcher close due to unresponsiveness",
			"key", p.w.prefix, "inputLength", len(p.w.input), "revision", rev)
		c.forget(p.w)
	}
	if !fired {
		timer.Stop()
		c.budget.returnUnused(timeout - time.Since(started))
	}
	clear(c.blocked)
}

// dispatchBookmarks sends a bookmark to each watcher whose bookmark is due,
// if it has not seen lastRev yet (or has had no bookmark at all). A
// bookmark is best effort: a watcher with a full input gets the next one.
func (c *cacher) dispatchBookmarks(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		w, ok := c.bookmarks.popDue(now)
		if !ok {
			return
		}
		if w.inputClosed {
			continue
		}
		if c.lastRev >= w.startRev && (c.lastRev > w.lastSentRev || !w.bookmarkSent) {
			select {
			case w.input <- watch.Event{Type: watch.Bookmark, Object: bookmarkObject(c.res, c.lastRev, false)}:
				w.lastSentRev, w.bookmarkSent = c.lastRev, true
			default:
			}
		}
		c.bookmarks.push(w, now.Add(w.bookmarkInterval))
	}
}

// --- the time budget ---

// timeBudget is the dispatcher's allowance for waiting on blocked
// watchers. Only the dispatcher uses it.
type timeBudget struct {
	now    func() time.Time
	budget time.Duration
	last   time.Time
}

func newTimeBudget(now func() time.Time) *timeBudget {
	return &timeBudget{now: now, budget: maxDispatchBudget, last: now()}
}

// takeAvailable returns the whole budget, refilled for the time passed.
func (b *timeBudget) takeAvailable() time.Duration {
	now := b.now()
	refill := time.Duration(float64(dispatchBudgetPerSecond) * now.Sub(b.last).Seconds())
	b.budget, b.last = min(maxDispatchBudget, b.budget+refill), now
	available := b.budget
	b.budget = 0
	return available
}

// returnUnused gives back what a wait did not use.
func (b *timeBudget) returnUnused(unused time.Duration) {
	if unused > 0 {
		b.budget = min(maxDispatchBudget, b.budget+unused)
	}
}

// --- when bookmarks are due ---

// bookmarkQueue orders watchers by when their next bookmark is due.
type bookmarkQueue []bookmarkDue

type bookmarkDue struct {
	at time.Time
	w  *cacheWatcher
}

func (q bookmarkQueue) Len() int           { return len(q) }
func (q bookmarkQueue) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q bookmarkQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *bookmarkQueue) Push(x any)        { *q = append(*q, x.(bookmarkDue)) }
func (q *bookmarkQueue) Pop() any {
	old := *q
	last := old[len(old)-1]
	old[len(old)-1] = bookmarkDue{}
	*q = old[:len(old)-1]
	return last
}

func (q *bookmarkQueue) push(w *cacheWatcher, at time.Time) { heap.Push(q, bookmarkDue{at: at, w: w}) }

// next returns when the earliest bookmark is due.
func (q *bookmarkQueue) next() (time.Time, bool) {
	if len(*q) == 0 {
		return time.Time{}, false
	}
	return (*q)[0].at, true
}

// popDue removes and returns a watcher whose bookmark is due at now.
func (q *bookmarkQueue) popDue(now time.Time) (*cacheWatcher, bool) {
	if len(*q) == 0 || (*q)[0].at.After(now) {
		return nil, false
	}
	return heap.Pop(q).(bookmarkDue).w, true
}
