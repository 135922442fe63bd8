package lab

import (
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

// The Observer delivers a steady cluster's heartbeats once each, from
// their sender, and each pair's heartbeats of a flush as one (the
// stream's series): over whole beats no flush brings two heartbeats from
// the leader to one follower, nothing is reported lost, and the counts add
// up to what raft sends (one a tick).
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
