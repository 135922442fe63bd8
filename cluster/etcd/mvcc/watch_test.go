package mvcc

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
)

const recvTimeout = 5 * time.Second

func recv(t *testing.T, ws *WatchStream) *pb.WatchResponse {
	t.Helper()
	select {
	case resp, ok := <-ws.Chan():
		if !ok {
			t.Fatal("watch stream closed")
		}
		return resp
	case <-time.After(recvTimeout):
		t.Fatal("no watch response")
	}
	return nil
}

// watch creates a watcher and consumes its creation response.
func watch(t *testing.T, ws *WatchStream, req *pb.WatchCreateRequest) int64 {
	t.Helper()
	id, err := ws.Watch(req)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	resp := recv(t, ws)
	if !resp.Created || resp.WatchId != id || resp.Canceled {
		t.Fatalf("creation response = %v, want created for %d", resp, id)
	}
	return id
}

// event is a compact form of an event for comparisons.
func event(ev *mvccpb.Event) string {
	s := fmt.Sprintf("%s %s@%d", ev.Type, ev.Kv.Key, ev.Kv.ModRevision)
	if ev.Type == mvccpb.Event_PUT {
		s += "=" + string(ev.Kv.Value)
	}
	if ev.PrevKv != nil {
		s += fmt.Sprintf(" prev=%s@%d", ev.PrevKv.Value, ev.PrevKv.ModRevision)
	}
	return s
}

// recvEvents receives responses for id until n events have arrived.
func recvEvents(t *testing.T, ws *WatchStream, id int64, n int) []string {
	t.Helper()
	var got []string
	for len(got) < n {
		resp := recv(t, ws)
		if resp.WatchId != id {
			t.Fatalf("response for watcher %d, want %d: %v", resp.WatchId, id, resp)
		}
		if resp.Canceled {
			t.Fatalf("watcher canceled: %v", resp)
		}
		for _, ev := range resp.Events {
			got = append(got, event(ev))
			if resp.Header.Revision < ev.Kv.ModRevision {
				t.Errorf("header revision %d below event revision %d", resp.Header.Revision, ev.Kv.ModRevision)
			}
		}
	}
	return got
}

func newStream(t *testing.T, ts *testStore) *WatchStream {
	ws := ts.s.NewWatchStream()
	t.Cleanup(ws.Close)
	return ws
}

func TestWatchLive(t *testing.T) {
	ts := newTestStore(t)
	ts.put("a", "0") // 2
	ws := newStream(t, ts)
	id, err := ws.Watch(&pb.WatchCreateRequest{Key: []byte("a")})
	if err != nil || id != 0 {
		t.Fatalf("first auto ID = %d, %v; want 0 as in etcd", id, err)
	}
	if resp := recv(t, ws); !resp.Created || resp.Header.Revision != 2 {
		t.Fatalf("creation response = %v, want created at revision 2", resp)
	}
	ts.put("a", "1") // 3
	ts.put("b", "1") // 4: not watched
	ts.del("a", "")  // 5
	want := []string{"PUT a@3=1", "DELETE a@5"}
	if got := recvEvents(t, ws, id, 2); !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
}

func TestWatchOptions(t *testing.T) {
	tests := []struct {
		name string
		req  *pb.WatchCreateRequest
		want []string
	}{
		{name: "single key", req: &pb.WatchCreateRequest{Key: []byte("p/a")}, want: []string{"PUT p/a@2=1", "PUT p/a@4=2", "DELETE p/a@6"}},
		{name: "prefix", req: &pb.WatchCreateRequest{Key: []byte("p/"), RangeEnd: []byte("p0")}, want: []string{"PUT p/a@2=1", "PUT p/b@3=1", "PUT p/a@4=2", "DELETE p/a@6"}},
		{name: "from key", req: &pb.WatchCreateRequest{Key: []byte("p/b"), RangeEnd: []byte{0}}, want: []string{"PUT p/b@3=1", "PUT q@5=1"}},
		{name: "all keys", req: &pb.WatchCreateRequest{RangeEnd: []byte{0}}, want: []string{"PUT p/a@2=1", "PUT p/b@3=1", "PUT p/a@4=2", "PUT q@5=1", "DELETE p/a@6"}},
		{name: "no put", req: &pb.WatchCreateRequest{Key: []byte("p/"), RangeEnd: []byte("p0"), Filters: []pb.WatchCreateRequest_FilterType{pb.WatchCreateRequest_NOPUT}}, want: []string{"DELETE p/a@6"}},
		{name: "no delete", req: &pb.WatchCreateRequest{Key: []byte("p/a"), Filters: []pb.WatchCreateRequest_FilterType{pb.WatchCreateRequest_NODELETE}}, want: []string{"PUT p/a@2=1", "PUT p/a@4=2"}},
		{name: "prev kv", req: &pb.WatchCreateRequest{Key: []byte("p/a"), PrevKv: true}, want: []string{"PUT p/a@2=1", "PUT p/a@4=2 prev=1@2", "DELETE p/a@6 prev=2@4"}},
	}
	for _, history := range []bool{false, true} {
		for _, tt := range tests {
			name := tt.name + "/live"
			if history {
				name = tt.name + "/from history"
			}
			t.Run(name, func(t *testing.T) {
				ts := newTestStore(t)
				ws := newStream(t, ts)
				write := func() {
					ts.put("p/a", "1") // 2
					ts.put("p/b", "1") // 3
					ts.put("p/a", "2") // 4
					ts.put("q", "1")   // 5
					ts.del("p/a", "")  // 6
				}
				req := proto.Clone(tt.req).(*pb.WatchCreateRequest)
				if history {
					write()
					req.StartRevision = 2
				}
				id := watch(t, ws, req)
				if !history {
					write()
				}
				if got := recvEvents(t, ws, id, len(tt.want)); !slices.Equal(got, tt.want) {
					t.Errorf("events = %q, want %q", got, tt.want)
				}
			})
		}
	}
}

func TestWatchHistoryThenLive(t *testing.T) {
	ts := newTestStore(t)
	ts.put("k", "1") // 2
	ts.put("k", "2") // 3
	ws := newStream(t, ts)
	id := watch(t, ws, &pb.WatchCreateRequest{Key: []byte("k"), StartRevision: 3})
	ts.put("k", "3") // 4
	want := []string{"PUT k@3=2", "PUT k@4=3"}
	if got := recvEvents(t, ws, id, 2); !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
}

func TestWatchSeesOnlyPublished(t *testing.T) {
	ts := newTestStore(t)
	ws := newStream(t, ts)
	id := watch(t, ws, &pb.WatchCreateRequest{Key: []byte("k")})
	// Write without publishing: the watcher must not see it yet. The
	// progress response, answered only when the watcher has reported
	// everything published, proves nothing was sent.
	if err := ts.db.Update(func(tx *bolt.Tx) error {
		_, err := ts.s.Put(tx, &pb.PutRequest{Key: []byte("k"), Value: []byte("1")})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	ws.RequestProgress()
	if resp := recv(t, ws); resp.WatchId != -1 || len(resp.Events) != 0 || resp.Header.Revision != 1 {
		t.Fatalf("got %v, want a progress response at revision 1", resp)
	}
	ts.s.Publish()
	if got := recvEvents(t, ws, id, 1); got[0] != "PUT k@2=1" {
		t.Errorf("event after publish = %q", got)
	}
}

func TestWatchCancel(t *testing.T) {
	ts := newTestStore(t)
	ws := newStream(t, ts)
	a := watch(t, ws, &pb.WatchCreateRequest{Key: []byte("a")})
	b := watch(t, ws, &pb.WatchCreateRequest{Key: []byte("b")})
	if err := ws.Cancel(a); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if resp := recv(t, ws); !resp.Canceled || resp.WatchId != a {
		t.Fatalf("got %v, want the cancel response of %d", resp, a)
	}
	ts.put("a", "1")
	ts.put("b", "1")
	// b's event comes next: nothing was sent for the canceled watcher.
	if got := recvEvents(t, ws, b, 1); got[0] != "PUT b@3=1" {
		t.Errorf("events = %q", got)
	}
	if err := ws.Cancel(a); !errors.Is(err, ErrWatcherNotExist) {
		t.Errorf("second cancel: %v, want %v", err, ErrWatcherNotExist)
	}
}

func TestWatchCreateErrorsAndIDs(t *testing.T) {
	ts := newTestStore(t)
	ws := newStream(t, ts)
	if id := watch(t, ws, &pb.WatchCreateRequest{Key: []byte("a"), WatchId: 1}); id != 1 {
		t.Errorf("client-chosen ID = %d, want 1", id)
	}
	if id := watch(t, ws, &pb.WatchCreateRequest{Key: []byte("a")}); id != 0 {
		t.Errorf("auto ID = %d, want 0", id)
	}
	if id := watch(t, ws, &pb.WatchCreateRequest{Key: []byte("a")}); id != 2 {
		t.Errorf("auto ID = %d, want 2 (1 is taken)", id)
	}
	tests := []struct {
		name string
		req  *pb.WatchCreateRequest
		want error
	}{
		{name: "duplicate ID", req: &pb.WatchCreateRequest{Key: []byte("a"), WatchId: 1}, want: ErrWatcherDuplicateID},
		{name: "empty range", req: &pb.WatchCreateRequest{Key: []byte("b"), RangeEnd: []byte("a")}, want: ErrEmptyWatcherRange},
		{name: "negative start revision", req: &pb.WatchCreateRequest{Key: []byte("a"), StartRevision: -1}, want: ErrCompacted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := ws.Watch(tt.req)
			if !errors.Is(err, tt.want) || id != -1 {
				t.Fatalf("watch = %d, %v; want -1, %v", id, err, tt.want)
			}
			resp := recv(t, ws)
			if !resp.Created || !resp.Canceled || resp.WatchId != -1 || resp.CancelReason != tt.want.Error() {
				t.Errorf("response = %v, want created+canceled with reason %q", resp, tt.want)
			}
		})
	}
}

func TestWatchCompacted(t *testing.T) {
	ts := newTestStore(t)
	for i := range 5 {
		ts.put("k", fmt.Sprint(i)) // 2..6
	}
	ts.compact(4)
	ws := newStream(t, ts)

	t.Run("start below compaction", func(t *testing.T) {
		id := watch(t, ws, &pb.WatchCreateRequest{Key: []byte("k"), StartRevision: 3})
		resp := recv(t, ws)
		if resp.WatchId != id || !resp.Canceled || resp.CompactRevision != 4 || len(resp.Events) != 0 {
			t.Fatalf("got %v, want compacted at 4", resp)
		}
		if err := ws.Cancel(id); !errors.Is(err, ErrWatcherNotExist) {
			t.Errorf("compacted watcher still exists: %v", err)
		}
	})
	t.Run("start at compaction", func(t *testing.T) {
		id := watch(t, ws, &pb.WatchCreateRequest{Key: []byte("k"), StartRevision: 4})
		want := []string{"PUT k@4=2", "PUT k@5=3", "PUT k@6=4"}
		if got := recvEvents(t, ws, id, 3); !slices.Equal(got, want) {
			t.Errorf("events = %q, want %q", got, want)
		}
	})
	t.Run("overtaken by compaction", func(t *testing.T) {
		ws := newStream(t, ts)
		id := watch(t, ws, &pb.WatchCreateRequest{Key: []byte("k")})
		// Writes and a compaction in one Ready, published together: the
		// watcher's next revision (7) is gone before it could be sent.
		ts.update(func(tx *bolt.Tx) error {
			for _, v := range []string{"a", "b", "c"} {
				if _, err := ts.s.Put(tx, &pb.PutRequest{Key: []byte("k"), Value: []byte(v)}); err != nil {
					return err
				}
			}
			_, err := ts.s.Compact(tx, 8)
			return err
		})
		resp := recv(t, ws)
		if resp.WatchId != id || !resp.Canceled || resp.CompactRevision != 8 {
			t.Fatalf("got %v, want compacted at 8", resp)
		}
	})
}

func TestWatchProgress(t *testing.T) {
	t.Run("request answered after history", func(t *testing.T) {
		ts := newTestStore(t)
		for i := range 20 {
			ts.put("k", fmt.Sprint(i)) // 2..21
		}
		ws := newStream(t, ts)
		id := watch(t, ws, &pb.WatchCreateRequest{Key: []byte("k"), StartRevision: 2})
		ws.RequestProgress()
		events := 0
		for {
			resp := recv(t, ws)
			if resp.WatchId == -1 {
				if events != 20 || resp.Header.Revision != 21 {
					t.Errorf("progress after %d events at revision %d, want after 20 at 21", events, resp.Header.Revision)
				}
				break
			}
			if resp.WatchId != id {
				t.Fatalf("unexpected response %v", resp)
			}
			events += len(resp.Events)
		}
	})
	t.Run("periodic notify", func(t *testing.T) {
		old := ProgressInterval
		ProgressInterval = 20 * time.Millisecond
		defer func() { ProgressInterval = old }()
		ts := newTestStore(t)
		ts.put("other", "1") // 2
		ws := newStream(t, ts)
		id := watch(t, ws, &pb.WatchCreateRequest{Key: []byte("k"), ProgressNotify: true})
		resp := recv(t, ws)
		if resp.WatchId != id || len(resp.Events) != 0 || resp.Canceled || resp.Header.Revision != 2 {
			t.Fatalf("got %v, want a progress notification at revision 2", resp)
		}
		ts.put("other", "2") // 3
		for {
			resp = recv(t, ws)
			if resp.Header.Revision == 3 {
				break
			}
		}
		if resp.WatchId != id || len(resp.Events) != 0 {
			t.Errorf("got %v, want a progress notification at revision 3", resp)
		}
	})
}

func TestWatchLargeHistoryIsSplitByRevision(t *testing.T) {
	ts := newTestStore(t)
	const puts = 2500
	ts.update(func(tx *bolt.Tx) error {
		for i := range puts {
			if _, err := ts.s.Put(tx, &pb.PutRequest{Key: []byte("k"), Value: []byte(fmt.Sprint(i))}); err != nil {
				return err
			}
		}
		// One revision with more events than a response would hold.
		var ops []*pb.RequestOp
		for i := range maxEventsPerResponse + 10 {
			ops = append(ops, putOp(fmt.Sprintf("t/%04d", i), "v"))
		}
		_, err := ts.s.Txn(tx, &pb.TxnRequest{Success: ops})
		return err
	})
	ws := newStream(t, ts)
	id := watch(t, ws, &pb.WatchCreateRequest{RangeEnd: []byte{0}, StartRevision: 1})
	next := int64(2)
	total := 0
	for total < puts+maxEventsPerResponse+10 {
		resp := recv(t, ws)
		if resp.WatchId != id {
			t.Fatalf("unexpected response %v", resp)
		}
		for _, ev := range resp.Events {
			if ev.Kv.ModRevision < next-1 || ev.Kv.ModRevision > next {
				t.Fatalf("event at %d after revision %d", ev.Kv.ModRevision, next-1)
			}
			next = ev.Kv.ModRevision + 1
		}
		last := resp.Events[len(resp.Events)-1].Kv.ModRevision
		if resp.Header.Revision != last {
			t.Errorf("header revision %d, want the last event's %d", resp.Header.Revision, last)
		}
		big := 0
		for _, ev := range resp.Events {
			if ev.Kv.ModRevision == puts+2 {
				big++
			}
		}
		if big != 0 && big != maxEventsPerResponse+10 {
			t.Errorf("the big revision came split: %d of its events in one response", big)
		}
		if len(resp.Events) > maxEventsPerResponse && big == 0 {
			t.Errorf("response of %d events", len(resp.Events))
		}
		total += len(resp.Events)
	}
}
