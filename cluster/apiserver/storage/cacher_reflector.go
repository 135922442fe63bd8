package storage

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/watch"
)

const (
	// listPageSize is how many keys one read of the cache's (re)list
	// gets; the pages are pinned to the first one's revision.
	listPageSize = 1000
	// defaultProgressRequestInterval is how often the reflector asks etcd for a
	// progress notification while the resource has watchers, so that
	// bookmarks carry a current revision even when the resource is quiet
	// (upstream's watch cache gets the same from etcd's periodic watch
	// progress notifications).
	defaultProgressRequestInterval = 5 * time.Second
	// The reflector retries a failed list or etcd watch after a backoff
	// that doubles from minReflectorBackoff to maxReflectorBackoff.
	minReflectorBackoff = 100 * time.Millisecond
	maxReflectorBackoff = 5 * time.Second
)

// errWatchClosed: etcd closed the watch without saying why.
var errWatchClosed = errors.New("etcd closed the watch")

// reflect keeps the watch cache equal to etcd: it lists the resource (at
// startRev first, if not 0), then follows one etcd watch from the listed
// revision. A broken watch is resumed from the cache's revision; only a
// compacted one makes it list again, which ends every watch it serves.
func (c *cacher) reflect(startRev int64) {
	backoff := minReflectorBackoff
	listed, rev := false, startRev
	for c.ctx.Err() == nil {
		if !listed {
			elems, listRev, err := c.listAll(rev)
			if err != nil {
				c.logger.Warn("watch cache list failed", "err", err)
				backoff = c.sleep(backoff)
				continue
			}
			c.wc.replace(elems, listRev)
			c.logger.Debug("watch cache initialized", "revision", listRev, "objects", len(elems))
			if !c.sendIncoming(&watchCacheEvent{typ: watch.Bookmark, rev: listRev}) {
				return
			}
			listed, rev, backoff = true, listRev, minReflectorBackoff
		}
		progressed, err := c.watchFrom(rev)
		if c.ctx.Err() != nil {
			return
		}
		if errors.Is(err, rpctypes.ErrCompacted) {
			c.logger.Info("watch cache lists again: etcd compacted the revision its watch resumes from", "revision", rev)
			c.wc.setNotReady()
			c.terminateAllWatchers()
			listed, rev = false, 0
			continue
		}
		c.logger.Warn("watch cache's etcd watch ended", "err", err)
		if progressed {
			backoff = minReflectorBackoff
		}
		backoff = c.sleep(backoff)
		rev = c.wc.revision()
	}
}

// sleep waits out backoff (or the cacher's end) and returns the next one.
func (c *cacher) sleep(backoff time.Duration) time.Duration {
	t := time.NewTimer(backoff)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.ctx.Done():
	}
	return min(backoff*2, maxReflectorBackoff)
}

// listAll reads every object of the resource at rev (0: the current
// revision; also when etcd has compacted rev or not reached it yet).
func (c *cacher) listAll(rev int64) ([]*storeElement, int64, error) {
	elems, listRev, err := c.listAt(rev)
	if rev != 0 && (errors.Is(err, rpctypes.ErrCompacted) || errors.Is(err, rpctypes.ErrFutureRev)) {
		return c.listAt(0)
	}
	return elems, listRev, err
}

func (c *cacher) listAt(rev int64) ([]*storeElement, int64, error) {
	var elems []*storeElement
	end := clientv3.GetPrefixRangeEnd(c.prefix)
	key := c.prefix
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(listPageSize)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := c.store.cli.Get(c.ctx, key, opts...)
		if err != nil {
			return nil, 0, err
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			obj, err := c.store.decodeKV(c.res, kv.Value, kv.ModRevision)
			if err != nil {
				c.logger.Warn("watch cache leaves out an object it cannot decode", "key", string(kv.Key), "err", err)
				continue
			}
			elems = append(elems, c.element(string(kv.Key), obj))
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return elems, rev, nil
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// watchFrom follows etcd's changes after rev until the watch fails; it
// reports whether any response arrived.
func (c *cacher) watchFrom(rev int64) (bool, error) {
	// Its own watcher: a progress request then concerns this watch alone.
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(c.ctx))
	defer cancel()
	watcher := clientv3.NewWatcher(c.store.cli)
	defer watcher.Close()
	ch := watcher.Watch(ctx, c.prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	periodic := time.NewTicker(c.store.progressRequestInterval)
	defer periodic.Stop()
	progressed := false
	for {
		select {
		case <-ctx.Done():
			return progressed, ctx.Err()
		case <-c.progressWanted:
			_ = watcher.RequestProgress(ctx)
		case <-periodic.C:
			if c.watcherCount() > 0 {
				_ = watcher.RequestProgress(ctx)
			}
		case resp, ok := <-ch:
			if !ok {
				return progressed, errWatchClosed
			}
			if err := resp.Err(); err != nil {
				return progressed, err
			}
			progressed = true
			if resp.IsProgressNotify() {
				// Every change up to this revision has been sent.
				c.wc.advance(resp.Header.Revision)
				if !c.sendIncoming(&watchCacheEvent{typ: watch.Bookmark, rev: resp.Header.Revision}) {
					return progressed, c.ctx.Err()
				}
				continue
			}
			for _, ev := range resp.Events {
				if !c.processEtcdEvent(ev) {
					return progressed, c.ctx.Err()
				}
			}
		}
	}
}

// processEtcdEvent decodes one change, the only time it is decoded, and
// applies it to the cache. An object that cannot be decoded is left out of
// the cache, as if deleted.
func (c *cacher) processEtcdEvent(ev *clientv3.Event) bool {
	key, rev := string(ev.Kv.Key), ev.Kv.ModRevision
	var cur *storeElement
	if ev.Type == clientv3.EventTypePut {
		obj, err := c.store.decodeKV(c.res, ev.Kv.Value, rev)
		if err != nil {
			c.logger.Warn("watch cache leaves out an object it cannot decode", "key", key, "err", err)
		} else {
			cur = c.element(key, obj)
		}
	}
	if wcev := c.wc.apply(key, rev, cur); wcev != nil {
		return c.sendIncoming(wcev)
	}
	return true
}

func (c *cacher) sendIncoming(ev *watchCacheEvent) bool {
	select {
	case c.incoming <- ev:
		return true
	case <-c.ctx.Done():
		return false
	}
}
