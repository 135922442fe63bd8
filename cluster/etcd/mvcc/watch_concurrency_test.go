package mvcc

import (
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// readUntilEnd collects a watcher's events until the event on key "end".
func readUntilEnd(t *testing.T, ws *WatchStream, id int64) []string {
	var got []string
	for {
		resp := recv(t, ws)
		if resp.WatchId != id || resp.Canceled {
			t.Errorf("unexpected response %v", resp)
			return got
		}
		for _, ev := range resp.Events {
			got = append(got, event(ev))
			if string(ev.Kv.Key) == "end" {
				return got
			}
		}
	}
}

// TestWatchConcurrentWrites checks that watchers see every change exactly
// once and in order while writes, reads and a slow client run at once, and
// that a client that does not read never blocks the writer.
func TestWatchConcurrentWrites(t *testing.T) {
	ts := newTestStore(t)
	rng := rand.New(rand.NewSource(1))
	all := &pb.WatchCreateRequest{RangeEnd: []byte{0}}

	live := newStream(t, ts)
	liveID := watch(t, live, all)
	slow := newStream(t, ts) // not read until the writes are done
	slowID := watch(t, slow, all)

	var wg sync.WaitGroup
	var liveGot, lateGot []string
	wg.Add(1)
	go func() {
		defer wg.Done()
		liveGot = readUntilEnd(t, live, liveID)
	}()
	stopReads := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stopReads:
				return
			default:
			}
			if _, err := ts.s.Range(&pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}}); err != nil {
				t.Errorf("concurrent range: %v", err)
				return
			}
		}
	}()

	var want []string
	const ops = 600
	for i := range ops {
		if i == ops/2 {
			// A watcher that starts from the beginning in the middle of
			// the writes must get history and live changes seamlessly.
			late := newStream(t, ts)
			lateReq := &pb.WatchCreateRequest{RangeEnd: []byte{0}, StartRevision: 2}
			lateID := watch(t, late, lateReq)
			wg.Add(1)
			go func() {
				defer wg.Done()
				lateGot = readUntilEnd(t, late, lateID)
			}()
		}
		key := fmt.Sprintf("k%d", rng.Intn(8))
		if rng.Intn(4) == 0 {
			resp := ts.del(key, "")
			if resp.Deleted > 0 {
				want = append(want, event(&mvccpb.Event{Type: mvccpb.Event_DELETE, Kv: &mvccpb.KeyValue{Key: []byte(key), ModRevision: resp.Header.Revision}}))
			}
			continue
		}
		value := fmt.Sprint(i)
		resp := ts.put(key, value)
		want = append(want, event(&mvccpb.Event{Type: mvccpb.Event_PUT, Kv: &mvccpb.KeyValue{Key: []byte(key), Value: []byte(value), ModRevision: resp.Header.Revision}}))
	}
	resp := ts.put("end", "1")
	want = append(want, event(&mvccpb.Event{Type: mvccpb.Event_PUT, Kv: &mvccpb.KeyValue{Key: []byte("end"), Value: []byte("1"), ModRevision: resp.Header.Revision}}))
	close(stopReads)
	wg.Wait()

	slowGot := readUntilEnd(t, slow, slowID)
	for name, got := range map[string][]string{"live": liveGot, "late": lateGot, "slow": slowGot} {
		if !slices.Equal(got, want) {
			t.Errorf("%s watcher got %d events, want %d; first difference at %d", name, len(got), len(want), firstDiff(got, want))
		}
	}
	// Nothing else is pending: the next response is the progress answer.
	for _, ws := range []*WatchStream{live, slow} {
		ws.RequestProgress()
		if resp := recv(t, ws); resp.WatchId != -1 {
			t.Errorf("extra response %v", resp)
		}
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
