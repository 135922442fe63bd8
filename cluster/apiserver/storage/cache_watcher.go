package storage

import (
	"context"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

// cacheWatcher is one API watch served by the watch cache. Its goroutine
// sends what the watch starts with (initial events or replayed changes),
// then what the dispatcher puts into its input.
type cacheWatcher struct {
	c *cacher
	// prefix is the key prefix of the namespace watched.
	prefix string
	pred   *Predicate
	// indexValue is the value pred pins the cache's index field to, if
	// it does (isIndexed).
	indexValue string
	isIndexed  bool

	allowBookmarks   bool
	bookmarkInterval time.Duration

	input  chan watch.Event
	result chan watch.Event
	done   chan struct{}
	once   sync.Once

	// Set by register before the watcher is added, then only read.
	startRev         int64
	snapshot         []*storeElement
	replay           []*watchCacheEvent
	initialEventsEnd bool

	// Owned by the dispatcher.
	lastSentRev  int64
	bookmarkSent bool

	// Guarded by c.mu.
	inputClosed bool
}

func newCacheWatcher(c *cacher, prefix string, opts WatchOptions, chanSize int) *cacheWatcher {
	w := &cacheWatcher{
		c:                c,
		prefix:           prefix,
		pred:             opts.Predicate,
		allowBookmarks:   opts.AllowBookmarks,
		bookmarkInterval: opts.BookmarkInterval,
		input:            make(chan watch.Event, chanSize),
		result:           make(chan watch.Event),
		done:             make(chan struct{}),
	}
	w.indexValue, w.isIndexed = c.indexValue(opts.Predicate)
	return w
}

// ResultChan returns the events; it is closed when the watch ends.
func (w *cacheWatcher) ResultChan() <-chan watch.Event { return w.result }

// Stop ends the watch.
func (w *cacheWatcher) Stop() {
	w.once.Do(func() {
		close(w.done)
		w.c.forget(w)
	})
}

// process runs the watch until it is stopped, its context ends or the
// cacher closes its input.
func (w *cacheWatcher) process(ctx context.Context) {
	defer close(w.result)
	defer w.Stop()
	sortByKey(w.snapshot)
	for _, e := range w.snapshot {
		if !w.send(ctx, watch.Event{Type: watch.Added, Object: e.obj}) {
			return
		}
	}
	w.snapshot = nil
	if w.initialEventsEnd {
		if !w.send(ctx, watch.Event{Type: watch.Bookmark, Object: bookmarkObject(w.c.res, w.startRev, true)}) {
			return
		}
	}
	for _, ev := range w.replay {
		if out, ok := w.transform(ev); ok && !w.send(ctx, out) {
			return
		}
	}
	w.replay = nil
	for {
		select {
		case ev, ok := <-w.input:
			if !ok {
				return
			}
			if !w.send(ctx, ev) {
				return
			}
		case <-w.done:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (w *cacheWatcher) send(ctx context.Context, ev watch.Event) bool {
	select {
	case w.result <- ev:
		return true
	case <-w.done:
		return false
	case <-ctx.Done():
		return false
	}
}

// transform returns the event this watcher sees for ev, as upstream's
// cacher does: an object that stops matching the selectors is DELETED for
// this watcher (its last matching state, at the event's revision), one
// that starts matching is ADDED.
func (w *cacheWatcher) transform(ev *watchCacheEvent) (watch.Event, bool) {
	if !strings.HasPrefix(ev.key, w.prefix) {
		return watch.Event{}, false
	}
	everything := w.pred.Empty()
	switch ev.typ {
	case watch.Added:
		if everything || w.pred.matchesAttrs(ev.cur.labels, ev.cur.fields) {
			return watch.Event{Type: watch.Added, Object: ev.cur.obj}, true
		}
	case watch.Deleted:
		if everything || w.pred.matchesAttrs(ev.prev.labels, ev.prev.fields) {
			return watch.Event{Type: watch.Deleted, Object: ev.cur.obj}, true
		}
	case watch.Modified:
		if everything {
			return watch.Event{Type: watch.Modified, Object: ev.cur.obj}, true
		}
		curPasses := w.pred.matchesAttrs(ev.cur.labels, ev.cur.fields)
		prevPasses := w.pred.matchesAttrs(ev.prev.labels, ev.prev.fields)
		switch {
		case curPasses && prevPasses:
			return watch.Event{Type: watch.Modified, Object: ev.cur.obj}, true
		case curPasses:
			return watch.Event{Type: watch.Added, Object: ev.cur.obj}, true
		case prevPasses:
			return watch.Event{Type: watch.Deleted, Object: ev.prevAtRevision()}, true
		}
	}
	return watch.Event{}, false
}
