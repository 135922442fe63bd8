package storage

import (
	"context"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
)

// watchEtcd starts a watch served by an etcd watch of its own, decoding
// and filtering every change of the resource for this watch alone: how
// every watch was served before the watch cache, and still is with
// Options.DisableWatchCache.
func (s *Store) watchEtcd(ctx context.Context, res *registry.Resource, namespace string, opts WatchOptions, initial bool, fromRev int64) watch.Interface {
	ctx, cancel := context.WithCancel(ctx)
	w := &etcdWatcher{
		store:  s,
		res:    res,
		prefix: res.Prefix(namespace),
		opts:   opts,
		result: make(chan watch.Event, 100),
		cancel: cancel,
	}
	go w.run(ctx, initial, fromRev)
	return w
}

// etcdWatcher turns one etcd watch into Kubernetes watch events.
type etcdWatcher struct {
	store  *Store
	res    *registry.Resource
	prefix string
	opts   WatchOptions
	result chan watch.Event
	cancel context.CancelFunc
	once   sync.Once
}

// ResultChan returns the events; it is closed when the watch ends.
func (w *etcdWatcher) ResultChan() <-chan watch.Event { return w.result }

// Stop ends the watch.
func (w *etcdWatcher) Stop() { w.once.Do(w.cancel) }

func (w *etcdWatcher) run(ctx context.Context, initial bool, rev int64) {
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
					if !w.send(ctx, watch.Event{Type: watch.Bookmark, Object: bookmarkObject(w.res, rev, false)}) {
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
func (w *etcdWatcher) sendInitial(ctx context.Context) (int64, bool) {
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
		if !w.send(ctx, watch.Event{Type: watch.Bookmark, Object: bookmarkObject(w.res, rev, true)}) {
			return 0, false
		}
	}
	return rev, true
}

// transform turns an etcd event into a watch event, as upstream's etcd3
// watcher does: an object that stops matching the selectors is DELETED for
// this watch, one that starts matching is ADDED.
func (w *etcdWatcher) transform(ev *clientv3.Event) (watch.Event, bool, error) {
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

func (w *etcdWatcher) send(ctx context.Context, ev watch.Event) bool {
	select {
	case w.result <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

func (w *etcdWatcher) sendError(ctx context.Context, err error) {
	w.send(ctx, errorEvent(err))
}
