package storage

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
)

// DefaultBookmarkInterval is how often a watch that allows bookmarks gets
// one while nothing else happens; upstream's watch cache sends them about
// once a minute.
const DefaultBookmarkInterval = time.Minute

// WatchOptions selects what a watch delivers and from where.
type WatchOptions struct {
	Predicate *Predicate
	// ResourceVersion and SendInitialEvents follow upstream's rules: with
	// SendInitialEvents unset, "" and "0" start with a synthetic ADDED
	// event per existing object and a number N starts after revision N;
	// with SendInitialEvents true the initial events end with a bookmark
	// annotated k8s.io/initial-events-end (the watch-list protocol
	// client-go's reflectors use).
	ResourceVersion   string
	SendInitialEvents *bool
	// AllowBookmarks asks for BOOKMARK events carrying the latest revision.
	AllowBookmarks   bool
	BookmarkInterval time.Duration
}

// Watch starts a watch on res in namespace ("" for all).
func (s *Store) Watch(ctx context.Context, res *registry.Resource, namespace string, opts WatchOptions) (watch.Interface, error) {
	if opts.Predicate == nil {
		pred, err := NewPredicate(res, nil, nil)
		if err != nil {
			return nil, err
		}
		opts.Predicate = pred
	}
	if opts.BookmarkInterval <= 0 {
		opts.BookmarkInterval = DefaultBookmarkInterval
	}
	initial := opts.ResourceVersion == "" || opts.ResourceVersion == "0"
	if opts.SendInitialEvents != nil {
		initial = *opts.SendInitialEvents
		if initial && !opts.AllowBookmarks {
			return nil, apierrors.NewBadRequest("sendInitialEvents is forbidden for watch unless allowWatchBookmarks=true")
		}
	}
	var fromRev int64
	if !initial && opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		rv, err := strconv.ParseInt(opts.ResourceVersion, 10, 64)
		if err != nil || rv < 0 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %s", opts.ResourceVersion))
		}
		fromRev = rv
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &watcher{
		store:  s,
		res:    res,
		prefix: res.Prefix(namespace),
		opts:   opts,
		result: make(chan watch.Event, 100),
		cancel: cancel,
	}
	go w.run(ctx, initial, fromRev)
	return w, nil
}

// watcher turns one etcd watch into Kubernetes watch events.
type watcher struct {
	store  *Store
	res    *registry.Resource
	prefix string
	opts   WatchOptions
	result chan watch.Event
	cancel context.CancelFunc
	once   sync.Once
}

// ResultChan returns the events; it is closed when the watch ends.
func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

// Stop ends the watch.
func (w *watcher) Stop() { w.once.Do(w.cancel) }

func (w *watcher) run(ctx context.Context, initial bool, rev int64) {
	defer close(w.result)
	defer w.Stop()
	if initial {
		var ok bool
		if rev, ok = w.sendInitial(ctx); !ok {
			return
		}
	} else if rev == 0 {
		current, err := w.store.CurrentRevision(ctx)
		if err != nil {
			w.sendError(ctx, err)
			return
		}
		rev = current
	}

	// Each API watch has its own etcd watch stream, so a progress request
	// (used for bookmarks) concerns this watch alone.
	etcdWatcher := clientv3.NewWatcher(w.store.cli)
	defer etcdWatcher.Close()
	ch := etcdWatcher.Watch(clientv3.WithRequireLeader(ctx), w.prefix,
		clientv3.WithPrefix(), clientv3.WithRev(rev+1), clientv3.WithPrevKV(), clientv3.WithCreatedNotify())

	var bookmarks <-chan time.Time
	if w.opts.AllowBookmarks {
		t := time.NewTicker(w.opts.BookmarkInterval)
		defer t.Stop()
		bookmarks = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-bookmarks:
			// etcd answers with a progress notification carrying the
			// revision every event before it has been delivered up to.
			_ = etcdWatcher.RequestProgress(clientv3.WithRequireLeader(ctx))
		case resp, ok := <-ch:
			if !ok {
				return
			}
			if resp.CompactRevision != 0 {
				w.sendError(ctx, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rev, resp.CompactRevision)))
				return
			}
			if err := resp.Err(); err != nil {
				w.sendError(ctx, etcdError(err))
				return
			}
			if resp.IsProgressNotify() {
				if w.opts.AllowBookmarks && resp.Header.Revision > rev {
					rev = resp.Header.Revision
					if !w.send(ctx, watch.Event{Type: watch.Bookmark, Object: w.bookmark(rev, false)}) {
						return
					}
				}
				continue
			}
			for _, ev := range resp.Events {
				event, ok, err := w.transform(ev)
				if err != nil {
					w.sendError(ctx, err)
					return
				}
				rev = ev.Kv.ModRevision
				if ok && !w.send(ctx, event) {
					return
				}
			}
		}
	}
}

// sendInitial sends an ADDED event per selected object and returns the
// revision they were read at.
func (w *watcher) sendInitial(ctx context.Context) (int64, bool) {
	var opts []clientv3.OpOption
	opts = append(opts, clientv3.WithPrefix())
	if w.opts.ResourceVersion == "0" && w.opts.SendInitialEvents == nil {
		opts = append(opts, clientv3.WithSerializable())
	}
	resp, err := w.store.cli.Get(ctx, w.prefix, opts...)
	if err != nil {
		w.sendError(ctx, etcdError(err))
		return 0, false
	}
	for _, kv := range resp.Kvs {
		obj, err := w.store.decodeKV(w.res, kv.Value, kv.ModRevision)
		if err != nil {
			w.sendError(ctx, err)
			return 0, false
		}
		if w.opts.Predicate.Matches(obj) && !w.send(ctx, watch.Event{Type: watch.Added, Object: obj}) {
			return 0, false
		}
	}
	rev := resp.Header.Revision
	if w.opts.SendInitialEvents != nil && w.opts.AllowBookmarks {
		if !w.send(ctx, watch.Event{Type: watch.Bookmark, Object: w.bookmark(rev, true)}) {
			return 0, false
		}
	}
	return rev, true
}

// transform turns an etcd event into a watch event, as upstream's etcd3
// watcher does: an object that stops matching the selectors is DELETED for
// this watch, one that starts matching is ADDED.
func (w *watcher) transform(ev *clientv3.Event) (watch.Event, bool, error) {
	var cur, old runtime.Object
	var err error
	if ev.Type == clientv3.EventTypePut {
		if cur, err = w.store.decodeKV(w.res, ev.Kv.Value, ev.Kv.ModRevision); err != nil {
			return watch.Event{}, false, err
		}
	}
	if ev.PrevKv != nil {
		// The previous state, at the revision of this change, as
		// upstream reports deletions.
		if old, err = w.store.decodeKV(w.res, ev.PrevKv.Value, ev.Kv.ModRevision); err != nil {
			return watch.Event{}, false, err
		}
	}
	pred := w.opts.Predicate
	switch {
	case ev.Type == clientv3.EventTypeDelete:
		if old == nil || !pred.Matches(old) {
			return watch.Event{}, false, nil
		}
		return watch.Event{Type: watch.Deleted, Object: old}, true, nil
	case ev.IsCreate() || old == nil:
		return watch.Event{Type: watch.Added, Object: cur}, pred.Matches(cur), nil
	}
	curPasses, oldPasses := pred.Matches(cur), pred.Matches(old)
	switch {
	case curPasses && oldPasses:
		return watch.Event{Type: watch.Modified, Object: cur}, true, nil
	case curPasses:
		return watch.Event{Type: watch.Added, Object: cur}, true, nil
	case oldPasses:
		return watch.Event{Type: watch.Deleted, Object: old}, true, nil
	}
	return watch.Event{}, false, nil
}

// bookmark returns an object of the watched kind carrying only a
// resourceVersion (and, at the end of initial events, upstream's
// annotation saying so).
func (w *watcher) bookmark(rev int64, initialEventsEnd bool) runtime.Object {
	obj := w.res.New()
	m, err := meta.Accessor(obj)
	if err == nil {
		m.SetResourceVersion(strconv.FormatInt(rev, 10))
		if initialEventsEnd {
			m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		}
	}
	return obj
}

func (w *watcher) send(ctx context.Context, ev watch.Event) bool {
	select {
	case w.result <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

func (w *watcher) sendError(ctx context.Context, err error) {
	status := apierrors.NewInternalError(err).ErrStatus
	if s, ok := err.(apierrors.APIStatus); ok {
		status = s.Status()
	}
	w.send(ctx, watch.Event{Type: watch.Error, Object: &status})
}
