package lab

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

func TestFoldBeats(t *testing.T) {
	beat := func(seq uint64, kind, typ, from, to string) etcd.Event {
		return etcd.Event{Seq: seq, Kind: kind, Msg: &etcd.MessageInfo{Type: typ, From: from, To: to}}
	}
	app := func(seq uint64) etcd.Event {
		return etcd.Event{Seq: seq, Kind: etcd.EventSend, Msg: &etcd.MessageInfo{Type: "MsgApp", From: "1", To: "2", Entries: 1}}
	}
	vote := etcd.Event{Seq: 11, Kind: etcd.EventElection}
	batch := []received{
		{event: beat(1, etcd.EventSend, "MsgHeartbeat", "1", "2")},
		{event: beat(2, etcd.EventSend, "MsgHeartbeat", "1", "3")},
		{event: app(3)},
		// A heartbeat this member stepped: its sender reports it.
		{event: beat(4, etcd.EventRecv, "MsgHeartbeat", "3", "1"), lost: 1},
		{event: beat(5, etcd.EventSend, "MsgHeartbeat", "1", "2")},
		{event: beat(6, etcd.EventRecv, "MsgHeartbeatResp", "2", "1")},
		{event: beat(7, etcd.EventSend, "MsgHeartbeat", "1", "2")},
		{event: beat(8, etcd.EventSend, "MsgHeartbeat", "1", "3")},
		{event: app(9)},
		{event: beat(10, etcd.EventSend, "MsgHeartbeatResp", "1", "3")},
		{event: vote, lost: 2},
		{event: beat(12, etcd.EventRecv, "MsgHeartbeat", "3", "1"), lost: 4},
	}
	withBeats := func(e etcd.Event, n int) etcd.Event { e.Beats = n; return e }
	want := []received{
		{event: app(3)}, // 1 and 2 folded into 7 and 8
		{event: withBeats(beat(7, etcd.EventSend, "MsgHeartbeat", "1", "2"), 3), lost: 1}, // 4's loss carried on
		{event: withBeats(beat(8, etcd.EventSend, "MsgHeartbeat", "1", "3"), 2)},
		{event: app(9)},
		{event: beat(10, etcd.EventSend, "MsgHeartbeatResp", "1", "3")},
		{event: vote, lost: 2},
	}
	got, tail := foldBeats(batch)
	if !reflect.DeepEqual(got, want) || tail != 4 {
		t.Errorf("folded:\n%v (tail %d)\nwant\n%v (tail 4)", describe(got), tail, describe(want))
	}

	// A batch without two heartbeats of one pair is delivered as it is.
	plain := []received{{event: app(1)}, {event: beat(2, etcd.EventSend, "MsgHeartbeat", "1", "2")}}
	if got, tail := foldBeats(append([]received(nil), plain...)); !reflect.DeepEqual(got, plain) || tail != 0 {
		t.Errorf("a lone heartbeat folded: %v", describe(got))
	}
}

func describe(rs []received) []string {
	var out []string
	for _, r := range rs {
		e := r.event
		typ := ""
		if e.Msg != nil {
			typ = e.Msg.Type
		}
		out = append(out, fmt.Sprintf("%s %s seq %d beats %d lost %d", e.Kind, typ, e.Seq, e.Beats, r.lost))
	}
	return out
}

// The Observer delivers a steady cluster's heartbeats once each, from
// their sender, and each pair's heartbeats of a flush as the last of
// them: over whole beats no flush brings two heartbeats from the leader
// to one follower, and the counts add up to what raft sends (one a tick).
func TestObserverFoldsHeartbeats(t *testing.T) {
	c := etcdtest.New(t, 3, nil)
	leader := c.WaitLeader(10 * time.Second)
	o := NewObserver(membersOfTest(c), ObserverOptions{})
	ctx := t.Context()
	go o.Run(ctx)

	start := time.Now().Truncate(RoutineBeat).Add(RoutineBeat)
	end := start.Add(8 * RoutineBeat)
	beats := map[string]int{}    // heartbeats sent per follower
	perFlush := map[string]int{} // per follower and flush
	for ob := range o.Observations() {
		if ob.Header().At.After(end) {
			break
		}
		if _, ok := ob.(*GapObservation); ok {
			t.Fatalf("events lost on a steady cluster: %+v", ob)
		}
		e, ok := ob.(*EventObservation)
		if !ok || !e.Event.Heartbeat() {
			continue
		}
		if e.Event.Kind != etcd.EventSend {
			t.Fatalf("a heartbeat stepped by %s delivered", e.Member)
		}
		if e.Member != c.Peers[leader].Name || e.Event.Msg.Type != "MsgHeartbeat" || e.At.Before(start) {
			continue
		}
		flush := e.At.Truncate(RoutineBeat).String() + e.Event.Msg.To
		if perFlush[flush]++; perFlush[flush] > 1 {
			t.Errorf("two heartbeats to %s in the flush at %s", e.Event.Msg.ToName, e.At.Truncate(RoutineBeat))
		}
		beats[e.Event.Msg.To] += e.Event.Count()
	}
	// Eight beats of 250 ms at one heartbeat per 100 ms tick: 20 to each
	// follower, give or take the flushes' edges and a loaded machine.
	if len(beats) != 2 {
		t.Fatalf("heartbeats went to %d followers, want 2: %v", len(beats), beats)
	}
	for to, n := range beats {
		if n < 10 || n > 30 {
			t.Errorf("%d heartbeats counted to %s over 2 s, want about 20", n, to)
		}
	}
}
