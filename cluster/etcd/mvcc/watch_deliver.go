package mvcc

import (
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// run is the stream's goroutine: it delivers whenever the store publishes a
// revision or a control response is queued, and sends progress responses
// on the progress ticker.
func (ws *WatchStream) run() {
	defer close(ws.donec)
	defer close(ws.out)
	ticker := time.NewTicker(ws.interval)
	defer ticker.Stop()
	for {
		if !ws.deliver() {
			return
		}
		select {
		case <-ws.notifyc:
		case <-ticker.C:
			if !ws.progressTick() {
				return
			}
		case <-ws.closec:
			return
		}
	}
}

// send hands one response to the client side; it gives up when the stream
// is closed.
func (ws *WatchStream) send(resp *pb.WatchResponse) bool {
	select {
	case ws.out <- resp:
		return true
	case <-ws.closec:
		return false
	}
}

// deliver sends control responses and events until every watcher has
// reported everything published, giving each watcher one response per
// round so a watcher far behind does not starve the others. It returns
// false when the stream is closed.
func (ws *WatchStream) deliver() bool {
	for {
		ctrl, watchers := ws.snapshot()
		for _, resp := range ctrl {
			if !ws.send(resp) {
				return false
			}
		}
		worked := len(ctrl) > 0
		for _, w := range watchers {
			resp, compacted := ws.s.nextResponse(w)
			if resp == nil {
				continue
			}
			worked = true
			// A watcher canceled meanwhile has its cancel response queued,
			// and nothing of it may follow that.
			if compacted {
				if !ws.remove(w) {
					continue
				}
			} else if !ws.active(w) {
				continue
			}
			if len(resp.Events) > 0 || compacted {
				if !ws.send(resp) {
					return false
				}
				w.sentSinceTick = true
			}
		}
		if !worked {
			break
		}
	}
	return ws.answerProgressRequest()
}

// nextResponse returns w's next response: its events from w.next up to the
// published revision (at most maxEventsPerResponse of them, whole
// revisions only), or the compacted response if history no longer reaches
// back to w.next. It advances w.next past what it returns. A nil response
// means w is synced; a response without events means only filtered-out
// changes were skipped.
func (s *Store) nextResponse(w *watcher) (resp *pb.WatchResponse, compacted bool) {
	published := s.published()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if w.next > published {
		return nil, false
	}
	if w.next < s.compactRev {
		return &pb.WatchResponse{
			Header:          &pb.ResponseHeader{Revision: published},
			WatchId:         w.id,
			CompactRevision: s.compactRev,
			Canceled:        true,
		}, true
	}
	var events []*mvccpb.Event
	upTo := published
	last := w.next - 1 // the newest revision fully looked at
	for _, e := range s.ix.log[s.ix.logFrom(w.next):] {
		if e.rev.main > published {
			break
		}
		if e.rev.main != last && len(events) >= maxEventsPerResponse {
			upTo = last
			break
		}
		last = e.rev.main
		if ev := w.event(e); ev != nil {
			events = append(events, ev)
		}
	}
	w.next = upTo + 1
	return &pb.WatchResponse{
		Header:  &pb.ResponseHeader{Revision: upTo},
		WatchId: w.id,
		Events:  events,
	}, false
}

// event turns a change into w's event, or nil if w does not want it.
func (w *watcher) event(e *entry) *mvccpb.Event {
	if !w.contains(e.kv.Key) {
		return nil
	}
	ev := &mvccpb.Event{Type: mvccpb.Event_PUT, Kv: copyKV(e.kv)}
	if e.tombstone {
		// A delete event carries the key and the revision of the delete,
		// as etcd's.
		ev.Type = mvccpb.Event_DELETE
		ev.Kv = &mvccpb.KeyValue{Key: e.kv.Key, ModRevision: e.rev.main}
	}
	if (ev.Type == mvccpb.Event_PUT && w.noPut) || (ev.Type == mvccpb.Event_DELETE && w.noDelete) {
		return nil
	}
	if w.prevKV && e.prev != nil && !e.prev.tombstone {
		ev.PrevKv = copyKV(e.prev.kv)
	}
	return ev
}

// synced reports whether w has reported everything up to rev and rev has
// reached the revision w asked to start from, etcd's condition for a
// progress response.
func (w *watcher) synced(rev int64) bool {
	return w.next > rev && rev >= w.startRev
}

// progressTick sends the periodic progress responses: to each synced
// watcher created with progress_notify that got no events since the last
// tick, as etcd elides a progress response right after events.
func (ws *WatchStream) progressTick() bool {
	published := ws.s.published()
	_, watchers := ws.peek()
	for _, w := range watchers {
		if !w.progressNotify {
			continue
		}
		if !w.sentSinceTick && w.synced(published) {
			resp := &pb.WatchResponse{Header: &pb.ResponseHeader{Revision: published}, WatchId: w.id}
			if !ws.send(resp) {
				return false
			}
		}
		w.sentSinceTick = false
	}
	return true
}

// answerProgressRequest sends the stream-wide progress response once every
// watcher is synced.
func (ws *WatchStream) answerProgressRequest() bool {
	requested, watchers := ws.peek()
	if !requested {
		return true
	}
	published := ws.s.published()
	for _, w := range watchers {
		if !w.synced(published) {
			// Answered after the next delivery round.
			return true
		}
	}
	ws.mu.Lock()
	ws.progressRequested = false
	ws.mu.Unlock()
	if len(watchers) == 0 {
		return true
	}
	return ws.send(&pb.WatchResponse{
		Header:  &pb.ResponseHeader{Revision: published},
		WatchId: invalidWatchID,
	})
}

// peek returns whether progress was requested and the current watchers.
func (ws *WatchStream) peek() (bool, []*watcher) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	watchers := make([]*watcher, 0, len(ws.watchers))
	for _, w := range ws.watchers {
		watchers = append(watchers, w)
	}
	return ws.progressRequested, watchers
}
