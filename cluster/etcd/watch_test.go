package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
	"github.com/klab-dev/klab/cluster/etcd/mvcc"
)

// nextWatch returns the next response of a watch, failing the test if none
// comes in time.
func nextWatch(t *testing.T, wch clientv3.WatchChan) clientv3.WatchResponse {
	t.Helper()
	select {
	case resp, ok := <-wch:
		if !ok {
			t.Fatalf("watch channel closed")
		}
		return resp
	case <-time.After(10 * time.Second):
		t.Fatalf("no watch response within 10s")
	}
	return clientv3.WatchResponse{}
}

// nextEvents collects n events from a watch.
func nextEvents(t *testing.T, wch clientv3.WatchChan, n int) []*clientv3.Event {
	t.Helper()
	var evs []*clientv3.Event
	for len(evs) < n {
		resp := nextWatch(t, wch)
		if err := resp.Err(); err != nil {
			t.Fatalf("watch failed: %v", err)
		}
		evs = append(evs, resp.Events...)
	}
	return evs
}

func describeEvent(e *clientv3.Event) string {
	s := fmt.Sprintf("%s %s=%s@%d", e.Type, e.Kv.Key, e.Kv.Value, e.Kv.ModRevision)
	if e.PrevKv != nil {
		s += fmt.Sprintf(" prev=%s@%d", e.PrevKv.Value, e.PrevKv.ModRevision)
	}
	return s
}

// TestWatch checks the watch behaviours clients depend on: the compacted
// error, previous values, and progress notifications (requested and
// periodic).
func TestWatch(t *testing.T) {
	// Periodic progress notifications come every 10 minutes by default;
	// shorten the interval for this test. It is set before any member
	// starts (and restored after they all stop), so no goroutine reads it
	// concurrently.
	oldInterval := mvcc.ProgressInterval
	mvcc.ProgressInterval = 200 * time.Millisecond
	t.Cleanup(func() { mvcc.ProgressInterval = oldInterval })

	c := etcdtest.New(t, 3, nil)
	// One member, a follower, serves both the writes and the watches: a
	// member answers a watch from its own applied state, so a watch on
	// another member than the one a compaction or put returned from may
	// not see it yet (as in etcd).
	cli := c.Client(c.Peers[(c.WaitLeader(5*time.Second)+1)%3].ClientURL)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("from a compacted revision", func(t *testing.T) {
		var revs []int64
		for i := 1; i <= 5; i++ {
			resp, err := cli.Put(ctx, "/watch/compacted", fmt.Sprint("v", i))
			if err != nil {
				t.Fatal(err)
			}
			revs = append(revs, resp.Header.Revision)
		}
		compactRev := revs[3]
		if _, err := cli.Compact(ctx, compactRev); err != nil {
			t.Fatalf("compact to %d: %v", compactRev, err)
		}
		resp := nextWatch(t, cli.Watch(ctx, "/watch/compacted", clientv3.WithRev(revs[0])))
		if !errors.Is(resp.Err(), rpctypes.ErrCompacted) || resp.CompactRevision != compactRev || !resp.Canceled {
			t.Errorf("watch from compacted revision %d: err %v, compact revision %d, canceled %v; want %v, %d, true",
				revs[0], resp.Err(), resp.CompactRevision, resp.Canceled, rpctypes.ErrCompacted, compactRev)
		}
		// The compacted revision itself is still there to watch from.
		wctx, wcancel := context.WithCancel(ctx)
		defer wcancel()
		evs := nextEvents(t, cli.Watch(wctx, "/watch/compacted", clientv3.WithRev(compactRev)), 2)
		if len(evs) != 2 || string(evs[0].Kv.Value) != "v4" || string(evs[1].Kv.Value) != "v5" || evs[0].Kv.ModRevision != compactRev {
			t.Errorf("watch from the compaction revision %d: got %v, want v4@%d and v5", compactRev, eventsString(evs), compactRev)
		}
	})

	t.Run("prevKV", func(t *testing.T) {
		wctx, wcancel := context.WithCancel(ctx)
		defer wcancel()
		const key = "/watch/prev"
		withPrev := cli.Watch(wctx, key, clientv3.WithPrevKV(), clientv3.WithCreatedNotify())
		without := cli.Watch(wctx, key, clientv3.WithCreatedNotify())
		for _, w := range []clientv3.WatchChan{withPrev, without} {
			if r := nextWatch(t, w); !r.Created {
				t.Fatalf("first watch response is not the created notification: %+v", r)
			}
		}
		if _, err := cli.Put(ctx, key, "a"); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Put(ctx, key, "b"); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
		evs := nextEvents(t, withPrev, 3)
		ok := len(evs) == 3 &&
			evs[0].Type == mvccpb.PUT && evs[0].PrevKv == nil &&
			evs[1].Type == mvccpb.PUT && evs[1].PrevKv != nil && string(evs[1].PrevKv.Value) == "a" &&
			evs[2].Type == mvccpb.DELETE && evs[2].PrevKv != nil && string(evs[2].PrevKv.Value) == "b"
		if !ok {
			t.Errorf("with prevKV: %v, want PUT a (no prev), PUT b prev=a, DELETE prev=b", eventsString(evs))
		}
		for _, e := range nextEvents(t, without, 3) {
			if e.PrevKv != nil {
				t.Errorf("without prevKV the event carries one: %s", describeEvent(e))
			}
		}
	})

	t.Run("progress notify request", func(t *testing.T) {
		wctx, wcancel := context.WithCancel(ctx)
		defer wcancel()
		wch := cli.Watch(wctx, "/watch/progress/quiet", clientv3.WithCreatedNotify())
		if r := nextWatch(t, wch); !r.Created {
			t.Fatalf("first watch response is not the created notification: %+v", r)
		}
		put, err := cli.Put(ctx, "/watch/progress/elsewhere", "x")
		if err != nil {
			t.Fatal(err)
		}
		if err := cli.RequestProgress(wctx); err != nil {
			t.Fatalf("request progress: %v", err)
		}
		resp := nextWatch(t, wch)
		if !resp.IsProgressNotify() || resp.Header.Revision < put.Header.Revision {
			t.Errorf("after a progress request: %+v (revision %d), want a progress notification at revision >= %d",
				resp, resp.Header.Revision, put.Header.Revision)
		}
	})

	t.Run("periodic progress notify", func(t *testing.T) {
		wctx, wcancel := context.WithCancel(ctx)
		defer wcancel()
		put, err := cli.Put(ctx, "/watch/progress/other", "y")
		if err != nil {
			t.Fatal(err)
		}
		wch := cli.Watch(wctx, "/watch/progress/periodic", clientv3.WithProgressNotify(), clientv3.WithCreatedNotify())
		if r := nextWatch(t, wch); !r.Created {
			t.Fatalf("first watch response is not the created notification: %+v", r)
		}
		resp := nextWatch(t, wch)
		if !resp.IsProgressNotify() || resp.Header.Revision < put.Header.Revision {
			t.Errorf("periodic notification: %+v, want a progress notification at revision >= %d", resp, put.Header.Revision)
		}
	})
}

func eventsString(evs []*clientv3.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = describeEvent(e)
	}
	return out
}
