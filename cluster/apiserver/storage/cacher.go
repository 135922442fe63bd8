package storage

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
)

const (
	// blockTimeout is how long a request for a revision the cache has not
	// reached yet waits for it, as upstream; then it fails with "Too large
	// resource version" and the client retries.
	blockTimeout = 3 * time.Second
	// resourceVersionTooHighRetrySeconds is the retry-after of that error.
	resourceVersionTooHighRetrySeconds = 1
	// readyTimeout is how long a watch waits for a starting cache's first
	// list before it is told to come back (429, as upstream).
	readyTimeout = 10 * time.Second
)

var (
	// errCacheNotReady sends a list to etcd while the cache (re)lists,
	// and tells a watch to come back when it takes too long.
	errCacheNotReady = apierrors.NewTooManyRequests("storage is (re)initializing", 1)
	// errCacherStopped answers watches of a cache that is shutting down.
	errCacherStopped = apierrors.NewServiceUnavailable("the watch cache is stopping")
)

// cacher serves the watches of one resource, and the lists that may be
// stale, from a watch cache fed by one etcd watch.
type cacher struct {
	store  *Store
	res    *registry.Resource
	prefix string
	// indexField is the field whose exact-match selectors the cacher
	// indexes watchers (and the store) by.
	indexField string
	wc         *watchCache
	logger     *slog.Logger

	// incoming carries events from the reflector to the dispatcher, in
	// revision order.
	incoming chan *watchCacheEvent
	// progressWanted asks the reflector for an etcd progress notification:
	// somebody waits for the cache to reach a revision.
	progressWanted chan struct{}
	ctx            context.Context
	cancel         context.CancelFunc
	done           chan struct{}

	mu sync.Mutex
	// stopped: the cacher is shutting down and takes no watchers.
	stopped bool
	// unindexed watchers see every event; indexed ones only the events
	// whose object has (or had) their index value.
	unindexed map[*cacheWatcher]struct{}
	indexed   map[string]map[*cacheWatcher]struct{}
	// While the dispatcher sends without the lock, watchers to be stopped
	// wait in toStop: their input must stay open until it is done.
	dispatching bool
	toStop      []*cacheWatcher
	bookmarks   bookmarkQueue
	// bookmarkWake tells the dispatcher a watcher with an earlier bookmark
	// was added.
	bookmarkWake chan struct{}

	dispatcherState
}

// indexFieldFor returns the field the watch cache of res indexes, as
// upstream's trigger functions: pods by spec.nodeName, because every
// kubelet watches the pods bound to its node; everything else by
// metadata.name, for single-object watches (a kubelet's own Node).
func indexFieldFor(res *registry.Resource) string {
	if res.StorageResource == "pods" {
		return "spec.nodeName"
	}
	return "metadata.name"
}

// newCacher returns the cacher of res, which runs until parent ends or it
// is stopped.
func newCacher(parent context.Context, s *Store, res *registry.Resource) *cacher {
	lower, upper := defaultLowerBoundCapacity, defaultUpperBoundCapacity
	if s.opts.WatchCacheCapacity > 0 {
		lower, upper = s.opts.WatchCacheCapacity, s.opts.WatchCacheCapacity
	}
	ctx, cancel := context.WithCancel(parent)
	c := &cacher{
		store:          s,
		res:            res,
		prefix:         res.Prefix(""),
		indexField:     indexFieldFor(res),
		wc:             newWatchCache(lower, upper, time.Now),
		logger:         s.logger.With("resource", res.StorageResource),
		incoming:       make(chan *watchCacheEvent, 100),
		progressWanted: make(chan struct{}, 1),
		ctx:            ctx,
		cancel:         cancel,
		done:           make(chan struct{}),
		unindexed:      map[*cacheWatcher]struct{}{},
		indexed:        map[string]map[*cacheWatcher]struct{}{},
		bookmarkWake:   make(chan struct{}, 1),
	}
	c.budget = newTimeBudget(time.Now)
	return c
}

// start runs the reflector and the dispatcher until stop. The first list
// is at startRev if it is not 0 (and etcd still has it).
func (c *cacher) start(startRev int64) {
	dispatched := make(chan struct{})
	go func() {
		defer close(dispatched)
		c.dispatchEvents()
	}()
	go func() {
		defer close(c.done)
		c.reflect(startRev)
		<-dispatched
		c.mu.Lock()
		c.stopped = true
		c.mu.Unlock()
		c.terminateAllWatchers()
	}()
}

// stop ends the cacher and closes its watches.
func (c *cacher) stop() {
	c.cancel()
	<-c.done
}

// element describes obj, stored at key, for the cache.
func (c *cacher) element(key string, obj runtime.Object) *storeElement {
	return newStoreElement(c.res, c.indexField, key, obj)
}

// newStoreElement describes obj, an object of res stored at key, for a
// cache indexed by indexField.
func newStoreElement(res *registry.Resource, indexField, key string, obj runtime.Object) *storeElement {
	e := &storeElement{key: key, obj: obj, fields: FieldSet(res, obj)}
	if m, err := meta.Accessor(obj); err == nil {
		e.labels = labels.Set(m.GetLabels())
	}
	e.index = e.fields[indexField]
	return e
}

// indexValue returns the value pred pins the index field to, if it does.
func (c *cacher) indexValue(pred *Predicate) (string, bool) {
	return pred.fields.RequiresExactMatch(c.indexField)
}

// requestProgress asks the reflector, without waiting, for an etcd
// progress notification.
func (c *cacher) requestProgress() {
	select {
	case c.progressWanted <- struct{}{}:
	default:
	}
}

// waitReady waits for the cache's (re)list.
func (c *cacher) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := c.whileRunning(ctx)
	defer cancel()
	if !c.wc.waitUntil(ctx, timeout, func() bool { return c.wc.ready }, nil) {
		return c.waitError(ctx, errCacheNotReady)
	}
	return nil
}

// waitFresh waits until the cache has every change up to rev, asking etcd
// for progress notifications meanwhile.
func (c *cacher) waitFresh(ctx context.Context, rev int64) error {
	ctx, cancel := c.whileRunning(ctx)
	defer cancel()
	if !c.wc.waitUntil(ctx, blockTimeout, func() bool { return c.wc.rev >= rev }, c.requestProgress) {
		return c.waitError(ctx, tooLargeResourceVersion(rev, c.wc.revision()))
	}
	return nil
}

// whileRunning returns ctx, also ended when the cacher stops.
func (c *cacher) whileRunning(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.ctx, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// waitError says why a wait failed: the request or the cacher ended, or
// timedOut.
func (c *cacher) waitError(ctx context.Context, timedOut error) error {
	switch {
	case c.ctx.Err() != nil:
		return errCacherStopped
	case ctx.Err() != nil:
		return etcdError(ctx.Err())
	}
	return timedOut
}

// tooLargeResourceVersion is upstream's error for a revision the cache did
// not reach in time.
func tooLargeResourceVersion(rev, current int64) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", rev, current), resourceVersionTooHighRetrySeconds)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return err
}

// watchStart is where a watch starts, as Store.Watch worked it out.
type watchStart struct {
	// initial: begin with an ADDED event per selected object.
	initial bool
	// consistent: the state the watch starts from must be etcd's current
	// one (resourceVersion "").
	consistent bool
	// minRev: the watch must start at this revision or later; with resume,
	// it starts exactly there, with the changes since.
	minRev int64
	resume bool
	// initialEventsEnd: end the initial events with the
	// k8s.io/initial-events-end bookmark (the watch-list protocol).
	initialEventsEnd bool
}

// watch starts a watch of the keys under prefix.
func (c *cacher) watch(ctx context.Context, prefix string, opts WatchOptions, start watchStart) (watch.Interface, error) {
	if start.consistent {
		rev, err := c.store.CurrentRevision(ctx)
		if err != nil {
			return nil, err
		}
		start.minRev = rev
	}
	w := newCacheWatcher(c, prefix, opts, c.wc.suggestedChannelSize())
	for {
		if err := c.waitReady(ctx, readyTimeout); err != nil {
			return nil, err
		}
		if start.minRev > 0 {
			if err := c.waitFresh(ctx, start.minRev); err != nil {
				return nil, err
			}
		}
		registered, err := c.register(w, start)
		if err != nil {
			return newErrWatcher(err), nil
		}
		if registered {
			break
		}
		// The cache began a relist after we waited: wait again.
	}
	go w.process(ctx)
	return w, nil
}

// register takes the watcher's starting point from the cache and adds it
// to the dispatcher's watchers, both under the cache's read lock, so that
// no change falls between what the watcher replays and what the
// dispatcher sends it. It returns false if the cache is not ready.
func (c *cacher) register(w *cacheWatcher, start watchStart) (bool, error) {
	c.wc.mu.RLock()
	defer c.wc.mu.RUnlock()
	if !c.wc.ready || c.wc.rev < start.minRev {
		return false, nil
	}
	w.startRev = c.wc.rev
	switch {
	case start.initial:
		w.snapshot = c.wc.snapshotLocked(w.prefix, w.pred, w.indexValue, w.isIndexed)
		if start.initialEventsEnd {
			// The watch-list bookmark tells the client where it is.
			w.initialEventsEnd, w.lastSentRev, w.bookmarkSent = true, w.startRev, true
		}
	case start.resume:
		events, err := c.wc.eventsSinceLocked(start.minRev)
		if err != nil {
			return false, err
		}
		w.replay = events
	}
	if !c.addWatcher(w) {
		return false, errCacherStopped
	}
	return true, nil
}

// list answers a list from the cache: the objects under prefix that pred
// selects, at a revision no older than minRev.
func (c *cacher) list(ctx context.Context, prefix string, pred *Predicate, minRev int64) (runtime.Object, error) {
	c.wc.mu.RLock()
	ready := c.wc.ready
	c.wc.mu.RUnlock()
	if !ready {
		return nil, errCacheNotReady
	}
	if minRev > 0 {
		if err := c.waitFresh(ctx, minRev); err != nil {
			return nil, err
		}
	}
	value, indexed := c.indexValue(pred)
	c.wc.mu.RLock()
	rev, ready := c.wc.rev, c.wc.ready
	elems := c.wc.snapshotLocked(prefix, pred, value, indexed)
	c.wc.mu.RUnlock()
	if !ready {
		return nil, errCacheNotReady
	}
	sortByKey(elems)

	items := make([]runtime.Object, len(elems))
	for i, e := range elems {
		items[i] = e.obj
	}
	list := c.res.NewList()
	if err := meta.SetList(list, items); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	lm.SetResourceVersion(strconv.FormatInt(rev, 10))
	return list, nil
}
