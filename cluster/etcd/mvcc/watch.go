package mvcc

import (
	"bytes"
	"errors"
	"sort"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// ProgressInterval is how often a synced watcher created with
// progress_notify gets an empty response carrying the current revision.
// It is etcd's default; tests lower it before creating a WatchStream.
var ProgressInterval = 10 * time.Minute

// Errors of the watch API, with etcd's texts: the gRPC layer puts them in a
// response's cancel_reason.
var (
	// ErrWatcherNotExist is returned when canceling an unknown watch ID.
	ErrWatcherNotExist = errors.New("mvcc: watcher does not exist")
	// ErrEmptyWatcherRange is returned for a range whose end is not after its key.
	ErrEmptyWatcherRange = errors.New("mvcc: watcher range is empty")
	// ErrWatcherDuplicateID is returned when a client reuses a watch ID on a stream.
	ErrWatcherDuplicateID = errors.New("mvcc: duplicate watch ID provided on the WatchStream")
	// ErrCompacted is the cancel reason of a watch created with a negative
	// start revision, as in etcd.
	ErrCompacted = errors.New("mvcc: required revision has been compacted")
)

const (
	// invalidWatchID is clientv3.InvalidWatchID: the ID of a failed
	// creation and of a progress response on behalf of the whole stream.
	invalidWatchID = -1
	// maxEventsPerResponse bounds one response while a watcher catches up;
	// one revision's events are never split.
	maxEventsPerResponse = 1000
	// outBufferLen is the response buffer of a stream, as etcd's chanBufLen.
	outBufferLen = 128
	// ctrlQueueLen bounds the creation and cancel responses waiting to be
	// sent, as etcd's ctrlStreamBufLen: past it, Watch and Cancel block,
	// so the gRPC receive loop stops reading and flow control holds back
	// a client that sends requests without reading responses.
	ctrlQueueLen = 16
)

// watcher is one watch on a stream. Its key, range and options never change;
// next, sentSinceTick are touched only by the stream's goroutine after the
// watcher is created.
type watcher struct {
	id             int64
	key, end       []byte // end as in index.visit
	startRev       int64  // as requested; 0 means "from now"
	noPut          bool
	noDelete       bool
	prevKV         bool
	progressNotify bool

	next          int64 // the next revision to report
	sentSinceTick bool  // events were sent since the last progress tick
}

func (w *watcher) contains(key []byte) bool {
	switch {
	case w.end == nil:
		return bytes.Equal(key, w.key)
	case len(w.end) == 0:
		return bytes.Compare(key, w.key) >= 0
	}
	return bytes.Compare(key, w.key) >= 0 && bytes.Compare(key, w.end) < 0
}

// WatchStream is the set of watchers of one gRPC Watch stream, sharing one
// channel of responses. A goroutine per stream reads each watcher's events
// from the store's history and sends them, so a slow client holds back only
// its own stream, never the store's writers.
//
// Chan carries every response the gRPC stream should send, in order: the
// creation response of each Watch call (also for a failed one), its events,
// progress responses, the compacted response, and the cancel response of
// each successful Cancel. The gRPC layer only fills the header's cluster
// fields and forwards them.
type WatchStream struct {
	s        *Store
	out      chan *pb.WatchResponse
	notifyc  chan struct{}
	closec   chan struct{}
	donec    chan struct{}
	interval time.Duration

	mu sync.Mutex
	// room is signalled, with mu, when the control queue has room again
	// or the stream closes.
	room     *sync.Cond
	watchers map[int64]*watcher
	nextID   int64
	// ctrl holds creation and cancel responses, at most ctrlQueueLen; the
	// goroutine sends them before any event of a watcher it sees, so a
	// creation always comes before that watcher's first event.
	ctrl              []*pb.WatchResponse
	progressRequested bool
	closed            bool
}

// NewWatchStream starts a stream of watchers on the store.
func (s *Store) NewWatchStream() *WatchStream {
	ws := &WatchStream{
		s:        s,
		out:      make(chan *pb.WatchResponse, outBufferLen),
		notifyc:  make(chan struct{}, 1),
		closec:   make(chan struct{}),
		donec:    make(chan struct{}),
		interval: ProgressInterval,
		watchers: make(map[int64]*watcher),
	}
	ws.room = sync.NewCond(&ws.mu)
	s.watchMu.Lock()
	s.streams[ws] = struct{}{}
	s.watchMu.Unlock()
	go ws.run()
	return ws
}

// Chan returns the stream's responses. It is closed after Close.
func (ws *WatchStream) Chan() <-chan *pb.WatchResponse { return ws.out }

// Watch creates a watcher and returns its ID: req.WatchId if it is not 0
// (a client-chosen ID), else the lowest unused ID from 0 on, as etcd does.
// start_revision 0 means "changes after the current revision". The creation
// response goes out on Chan before any event of the watcher; on error the
// response has watch ID -1, Canceled set and the error as cancel reason, as
// etcd's, and the error is returned too. Fragment is ignored: a response
// never exceeds maxEventsPerResponse events.
func (ws *WatchStream) Watch(req *pb.WatchCreateRequest) (int64, error) {
	key := req.Key
	if len(key) == 0 {
		// "\x00" is the smallest key, as in etcd's gRPC layer.
		key = []byte{0}
	}
	end := rangeEnd(req.RangeEnd)

	ws.mu.Lock()
	defer ws.mu.Unlock()
	// Wait before anything changes: a watcher must not exist, and have its
	// events delivered, while its creation response waits for room.
	ws.waitRoom()
	published := ws.s.published()
	id, err := ws.allocID(req, key, end)
	if err != nil {
		ws.queue(&pb.WatchResponse{
			Header:       &pb.ResponseHeader{Revision: published},
			WatchId:      invalidWatchID,
			Created:      true,
			Canceled:     true,
			CancelReason: err.Error(),
		})
		return invalidWatchID, err
	}
	w := &watcher{
		id:             id,
		key:            bytes.Clone(key),
		end:            bytes.Clone(end),
		startRev:       req.StartRevision,
		prevKV:         req.PrevKv,
		progressNotify: req.ProgressNotify,
		next:           req.StartRevision,
	}
	if w.next <= 0 {
		w.next = published + 1
	}
	for _, f := range req.Filters {
		switch f {
		case pb.WatchCreateRequest_NOPUT:
			w.noPut = true
		case pb.WatchCreateRequest_NODELETE:
			w.noDelete = true
		}
	}
	ws.watchers[id] = w
	ws.queue(&pb.WatchResponse{
		Header:  &pb.ResponseHeader{Revision: published},
		WatchId: id,
		Created: true,
	})
	return id, nil
}

// allocID validates a creation and picks the watch ID; ws.mu is held.
func (ws *WatchStream) allocID(req *pb.WatchCreateRequest, key, end []byte) (int64, error) {
	switch {
	case len(end) != 0 && bytes.Compare(key, end) >= 0:
		return 0, ErrEmptyWatcherRange
	case req.StartRevision < 0:
		return 0, ErrCompacted
	case ws.closed:
		// etcd answers a watch on a closed stream with this error too.
		return 0, ErrEmptyWatcherRange
	case req.WatchId != 0:
		if _, ok := ws.watchers[req.WatchId]; ok {
			return 0, ErrWatcherDuplicateID
		}
		return req.WatchId, nil
	}
	for ws.watchers[ws.nextID] != nil {
		ws.nextID++
	}
	id := ws.nextID
	ws.nextID++
	return id, nil
}

// Cancel removes a watcher. Its cancel response follows any of its events
// already on the way; no event of it follows the cancel response.
func (ws *WatchStream) Cancel(id int64) error {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.waitRoom()
	published := ws.s.published()
	if _, ok := ws.watchers[id]; !ok || ws.closed {
		return ErrWatcherNotExist
	}
	delete(ws.watchers, id)
	ws.queue(&pb.WatchResponse{
		Header:   &pb.ResponseHeader{Revision: published},
		WatchId:  id,
		Canceled: true,
	})
	return nil
}

// RequestProgress asks for a progress response: watch ID -1 and the current
// revision, sent once every watcher of the stream has reported everything
// up to that revision. etcd drops the request if a watcher is behind at that
// moment; klab keeps it until they catch up, which is what a client waiting
// for it expects. A stream without watchers gets nothing, as in etcd.
func (ws *WatchStream) RequestProgress() {
	ws.mu.Lock()
	ws.progressRequested = true
	ws.mu.Unlock()
	ws.notify()
}

// Close stops the stream, cancels its watchers and closes Chan.
func (ws *WatchStream) Close() {
	ws.mu.Lock()
	if ws.closed {
		ws.mu.Unlock()
		<-ws.donec
		return
	}
	ws.closed = true
	ws.watchers = map[int64]*watcher{}
	ws.room.Broadcast()
	ws.mu.Unlock()
	close(ws.closec)
	<-ws.donec
	ws.s.watchMu.Lock()
	delete(ws.s.streams, ws)
	ws.s.watchMu.Unlock()
}

// waitRoom blocks, with ws.mu held, until the control queue has room or
// the stream is closed. Blocking the caller is the back-pressure: the gRPC
// receive loop stops reading, and the client's sends stall once the
// connection's flow-control window is full.
func (ws *WatchStream) waitRoom() {
	for len(ws.ctrl) >= ctrlQueueLen && !ws.closed {
		ws.room.Wait()
	}
}

// queue adds a control response and wakes the goroutine; ws.mu is held
// and waitRoom has returned.
func (ws *WatchStream) queue(resp *pb.WatchResponse) {
	ws.ctrl = append(ws.ctrl, resp)
	ws.notify()
}

// notify wakes the goroutine without blocking; one pending wake-up is enough.
func (ws *WatchStream) notify() {
	select {
	case ws.notifyc <- struct{}{}:
	default:
	}
}

// snapshot takes the pending control responses and the current watchers,
// ordered by ID so that delivery order does not depend on map order.
func (ws *WatchStream) snapshot() ([]*pb.WatchResponse, []*watcher) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ctrl := ws.ctrl
	ws.ctrl = nil
	if len(ctrl) > 0 {
		ws.room.Broadcast()
	}
	watchers := make([]*watcher, 0, len(ws.watchers))
	for _, w := range ws.watchers {
		watchers = append(watchers, w)
	}
	sort.Slice(watchers, func(i, j int) bool { return watchers[i].id < watchers[j].id })
	return ctrl, watchers
}

// active reports whether w is still a watcher of the stream.
func (ws *WatchStream) active(w *watcher) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.watchers[w.id] == w
}

// remove drops w if it is still a watcher of the stream and reports
// whether it was.
func (ws *WatchStream) remove(w *watcher) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.watchers[w.id] != w {
		return false
	}
	delete(ws.watchers, w.id)
	return true
}
