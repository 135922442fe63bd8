package storage

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// The cyclic buffer's size follows upstream's watch cache: it starts small,
// doubles while the events it would drop are younger than
// eventFreshDuration, and halves when the most recent quarter of it is
// older than that.
const (
	defaultLowerBoundCapacity = 100
	defaultUpperBoundCapacity = 100 * 1024
	eventFreshDuration        = 75 * time.Second
)

// storeElement is one object as the watch cache keeps it, with what
// selectors look at computed once.
type storeElement struct {
	key    string
	obj    runtime.Object
	labels labels.Set
	fields fields.Set
	// index is the value of the cache's index field (spec.nodeName of a
	// pod, metadata.name of anything else).
	index string
}

// watchCacheEvent is one change, decoded once and shared by every watcher.
type watchCacheEvent struct {
	typ watch.EventType // Added, Modified or Deleted
	key string
	rev int64
	// cur is the object after the change; for a deletion, its last state
	// with the deletion's revision, as upstream reports deletions.
	cur *storeElement
	// prev is the object before the change, nil when it was created.
	prev     *storeElement
	recorded time.Time

	prevAtRevOnce sync.Once
	prevAtRev     runtime.Object
}

// prevAtRevision returns the previous object with this event's revision:
// what a watcher gets as DELETED when the object stops matching its
// selector. It is made once, for the first watcher that needs it.
func (e *watchCacheEvent) prevAtRevision() runtime.Object {
	e.prevAtRevOnce.Do(func() {
		e.prevAtRev = e.prev.obj.DeepCopyObject()
		setResourceVersion(e.prevAtRev, e.rev)
	})
	return e.prevAtRev
}

// watchCache is one resource's current objects and its recent changes.
// The reflector is its only writer; watches and lists read it.
type watchCache struct {
	mu sync.RWMutex
	// changed is closed and replaced whenever rev or ready changes.
	changed chan struct{}
	ready   bool
	// rev is the revision the cache is at: every change up to it is in.
	rev int64
	// listRev is the revision of the last full list; evictedRev that of
	// the newest event dropped from the buffer since, 0 if none was.
	listRev, evictedRev int64

	store   map[string]*storeElement
	byIndex map[string]map[string]*storeElement

	// buf holds the events with indexes start..end-1 (taken modulo
	// len(buf)), oldest first.
	buf                    []*watchCacheEvent
	start, end             int
	lowerBound, upperBound int
	now                    func() time.Time
}

func newWatchCache(lowerBound, upperBound int, now func() time.Time) *watchCache {
	return &watchCache{
		changed:    make(chan struct{}),
		store:      map[string]*storeElement{},
		byIndex:    map[string]map[string]*storeElement{},
		buf:        make([]*watchCacheEvent, lowerBound),
		lowerBound: lowerBound,
		upperBound: upperBound,
		now:        now,
	}
}

// notifyLocked wakes everyone waiting for the cache to change.
func (w *watchCache) notifyLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// replace makes elems, listed at rev, the cache's content and forgets the
// buffered events, which no longer lead up to it.
func (w *watchCache) replace(elems []*storeElement, rev int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.store = make(map[string]*storeElement, len(elems))
	w.byIndex = map[string]map[string]*storeElement{}
	for _, e := range elems {
		w.putLocked(e)
	}
	w.buf = make([]*watchCacheEvent, w.lowerBound)
	w.start, w.end = 0, 0
	w.rev, w.listRev, w.evictedRev = rev, rev, 0
	w.ready = true
	w.notifyLocked()
}

// setNotReady holds new watches back while the cache relists.
func (w *watchCache) setNotReady() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ready = false
	w.notifyLocked()
}

// apply records a change at rev: cur is the new object, nil for a
// deletion. It returns the event, or nil for the deletion of an object the
// cache never had.
func (w *watchCache) apply(key string, rev int64, cur *storeElement) *watchCacheEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	prev := w.store[key]
	ev := &watchCacheEvent{key: key, rev: rev, cur: cur, prev: prev, recorded: w.now()}
	switch {
	case cur == nil && prev == nil:
		w.advanceLocked(rev)
		return nil
	case cur == nil:
		ev.typ = watch.Deleted
		last := prev.obj.DeepCopyObject()
		setResourceVersion(last, rev)
		ev.cur = &storeElement{key: key, obj: last, labels: prev.labels, fields: prev.fields, index: prev.index}
		w.deleteLocked(prev)
	case prev == nil:
		ev.typ = watch.Added
		w.putLocked(cur)
	default:
		ev.typ = watch.Modified
		w.deleteLocked(prev)
		w.putLocked(cur)
	}
	w.appendLocked(ev)
	w.advanceLocked(rev)
	return ev
}

// advance moves the cache to rev without a change: etcd said every change
// up to rev has been sent (a progress notification).
func (w *watchCache) advance(rev int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advanceLocked(rev)
}

func (w *watchCache) advanceLocked(rev int64) {
	if rev > w.rev {
		w.rev = rev
		w.notifyLocked()
	}
}

func (w *watchCache) putLocked(e *storeElement) {
	w.store[e.key] = e
	byKey := w.byIndex[e.index]
	if byKey == nil {
		byKey = map[string]*storeElement{}
		w.byIndex[e.index] = byKey
	}
	byKey[e.key] = e
}

func (w *watchCache) deleteLocked(e *storeElement) {
	delete(w.store, e.key)
	if byKey := w.byIndex[e.index]; byKey != nil {
		delete(byKey, e.key)
		if len(byKey) == 0 {
			delete(w.byIndex, e.index)
		}
	}
}

// --- the cyclic buffer ---

func (w *watchCache) capacity() int { return len(w.buf) }

// suggestedChannelSize sizes a new watcher's input to hold about a second
// of the events the buffer is sized for (upstream's rule of thumb),
// between 10 and 1000.
func (w *watchCache) suggestedChannelSize() int {
	w.mu.RLock()
	capacity := w.capacity()
	w.mu.RUnlock()
	size := int(math.Ceil(float64(capacity) / eventFreshDuration.Seconds()))
	return min(max(size, 10), 1000)
}

func (w *watchCache) size() int { return w.end - w.start }

func (w *watchCache) at(i int) *watchCacheEvent { return w.buf[i%len(w.buf)] }

func (w *watchCache) appendLocked(ev *watchCacheEvent) {
	if w.size() == w.capacity() {
		w.resizeLocked(ev.recorded)
	}
	if w.size() == w.capacity() {
		w.evictedRev = w.at(w.start).rev
		w.buf[w.start%len(w.buf)] = nil
		w.start++
	}
	w.buf[w.end%len(w.buf)] = ev
	w.end++
}

// resizeLocked grows a full buffer whose oldest event is still fresh, and
// shrinks one whose most recent quarter is already stale (a rule with a
// gap between the two, so the size does not flap).
func (w *watchCache) resizeLocked(now time.Time) {
	switch capacity := w.capacity(); {
	case now.Sub(w.at(w.start).recorded) < eventFreshDuration:
		if grown := min(capacity*2, w.upperBound); grown > capacity {
			w.resizeToLocked(grown)
		}
	case now.Sub(w.at(w.end-max(capacity/4, 1)).recorded) > eventFreshDuration:
		if shrunk := max(capacity/2, w.lowerBound); shrunk < capacity {
			w.resizeToLocked(shrunk)
		}
	}
}

// resizeToLocked moves the buffer into one of the given capacity, keeping
// the newest events that fit.
func (w *watchCache) resizeToLocked(capacity int) {
	if drop := w.size() - capacity; drop > 0 {
		w.evictedRev = w.at(w.start + drop - 1).rev
		w.start += drop
	}
	buf := make([]*watchCacheEvent, capacity)
	for i := w.start; i < w.end; i++ {
		buf[i%capacity] = w.at(i)
	}
	w.buf = buf
}

// oldestRevisionLocked is the oldest revision a watch can resume from:
// every event after it is still in the buffer.
func (w *watchCache) oldestRevisionLocked() int64 { return max(w.listRev, w.evictedRev) }

// eventsSinceLocked returns the buffered events after rev, or 410 Expired
// when some of them have left the buffer.
func (w *watchCache) eventsSinceLocked(rev int64) ([]*watchCacheEvent, error) {
	if oldest := w.oldestRevisionLocked(); rev < oldest {
		return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rev, oldest))
	}
	first := w.start + sort.Search(w.size(), func(i int) bool { return w.at(w.start+i).rev > rev })
	out := make([]*watchCacheEvent, 0, w.end-first)
	for i := first; i < w.end; i++ {
		out = append(out, w.at(i))
	}
	return out, nil
}

// --- reads of the store ---

// snapshotLocked returns the objects under prefix that pred selects, in
// no particular order (sortByKey orders them as etcd lists them, once the
// lock is released). A predicate that pins the index field (indexed) only
// looks at the objects with that value.
func (w *watchCache) snapshotLocked(prefix string, pred *Predicate, indexValue string, indexed bool) []*storeElement {
	candidates := w.store
	if indexed {
		candidates = w.byIndex[indexValue]
	}
	var out []*storeElement
	for key, e := range candidates {
		if strings.HasPrefix(key, prefix) && pred.matchesAttrs(e.labels, e.fields) {
			out = append(out, e)
		}
	}
	return out
}

func sortByKey(elems []*storeElement) {
	sort.Slice(elems, func(i, j int) bool { return elems[i].key < elems[j].key })
}

// --- waiting ---

// waitUntil blocks until cond holds (checked under the read lock), ctx
// ends or timeout passes; it returns whether cond held. poke, if not nil,
// is called before the first wait and every pokeInterval while waiting.
func (w *watchCache) waitUntil(ctx context.Context, timeout time.Duration, cond func() bool, poke func()) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var repoke <-chan time.Time
	for first := true; ; first = false {
		w.mu.RLock()
		ok, changed := cond(), w.changed
		w.mu.RUnlock()
		if ok {
			return true
		}
		if poke != nil && first {
			poke()
			t := time.NewTicker(pokeInterval)
			defer t.Stop()
			repoke = t.C
		}
		select {
		case <-changed:
		case <-repoke:
			poke()
		case <-deadline.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// pokeInterval is how often a waiter for a fresher cache asks again for
// an etcd progress notification, as upstream's progress requester does.
const pokeInterval = 100 * time.Millisecond

// revision returns the revision the cache is at.
func (w *watchCache) revision() int64 {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.rev
}
