package storage

import "time"

// The cacher's watchers, in the sets the dispatcher reads: by index value
// for watchers whose selector pins the index field, in one set for the
// others.

// addWatcher makes w one of the dispatcher's watchers.
func (c *cacher) addWatcher(w *cacheWatcher) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return false
	}
	if w.isIndexed {
		set := c.indexed[w.indexValue]
		if set == nil {
			set = map[*cacheWatcher]struct{}{}
			c.indexed[w.indexValue] = set
		}
		set[w] = struct{}{}
	} else {
		c.unindexed[w] = struct{}{}
	}
	if w.allowBookmarks {
		c.bookmarks.push(w, time.Now().Add(w.bookmarkInterval))
		select {
		case c.bookmarkWake <- struct{}{}:
		default:
		}
	}
	return true
}

// forget removes w from the watchers and closes its input, or has the
// dispatcher close it when it is done sending.
func (c *cacher) forget(w *cacheWatcher) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgetLocked(w)
}

func (c *cacher) forgetLocked(w *cacheWatcher) {
	if w.isIndexed {
		if set := c.indexed[w.indexValue]; set != nil {
			delete(set, w)
			if len(set) == 0 {
				delete(c.indexed, w.indexValue)
			}
		}
	} else {
		delete(c.unindexed, w)
	}
	if w.inputClosed {
		return
	}
	w.inputClosed = true
	if c.dispatching {
		c.toStop = append(c.toStop, w)
		return
	}
	close(w.input)
}

// terminateAllWatchers ends every watch: the cache is relisting, or
// stopping. Their clients watch again and learn whether the cache still
// reaches back to where they were.
func (c *cacher) terminateAllWatchers() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for w := range c.unindexed {
		c.forgetLocked(w)
	}
	for _, set := range c.indexed {
		for w := range set {
			c.forgetLocked(w)
		}
	}
}

// watcherCount returns how many watches the cacher serves.
func (c *cacher) watcherCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.unindexed)
	for _, set := range c.indexed {
		n += len(set)
	}
	return n
}
