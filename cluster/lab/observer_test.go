package lab

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
	"github.com/klab-dev/klab/internal/testenv"
)

// membersOfTest describes an etcdtest cluster as cluster.json would.
func membersOfTest(c *etcdtest.Cluster) []MemberInfo {
	out := make([]MemberInfo, len(c.Peers))
	for i, p := range c.Peers {
		out[i] = MemberInfo{Name: p.Name, PeerURL: p.PeerURL, ClientURL: p.ClientURL, DebugURL: p.PeerURL + "/debug/klab"}
	}
	return out
}

// awaitObservation reads observations until match returns true or the
// deadline passes, checking that Seq grows by one each time.
func awaitObservation(t *testing.T, obs <-chan Observation, lastSeq *uint64, what string, match func(Observation) bool) Observation {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case o, ok := <-obs:
			if !ok {
				t.Fatalf("observations closed while waiting for %s", what)
			}
			if h := o.Header(); h.Seq != *lastSeq+1 {
				t.Fatalf("observation seq %d follows %d", h.Seq, *lastSeq)
			}
			*lastSeq = o.Header().Seq
			if match(o) {
				return o
			}
		case <-deadline:
			t.Fatalf("no observation of %s within 10s", what)
		}
	}
}

func TestObserverFollowsRealCluster(t *testing.T) {
	testenv.EndToEnd(t)
	c := etcdtest.New(t, 3, nil)
	leader := c.WaitLeader(10 * time.Second)
	leaderName := c.Peers[leader].Name

	ctx, cancel := context.WithCancel(context.Background())
	o := NewObserver(membersOfTest(c), ObserverOptions{})
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	obs := o.Observations()
	var seq uint64

	t.Run("reports the leader", func(t *testing.T) {
		got := awaitObservation(t, obs, &seq, "the leader's status", func(o Observation) bool {
			s, ok := o.(*StatusObservation)
			return ok && s.Member == leaderName && s.Status.State == "StateLeader"
		}).(*StatusObservation)
		if got.Status.Term == 0 || len(got.Status.Progress) != 2 {
			t.Errorf("leader status term %d with %d followers' progress, want a term and 2", got.Status.Term, len(got.Status.Progress))
		}
	})

	t.Run("receives messages as they are sent", func(t *testing.T) {
		got := awaitObservation(t, obs, &seq, "a heartbeat sent by the leader", func(o Observation) bool {
			e, ok := o.(*EventObservation)
			return ok && e.Event.Kind == etcd.EventSend && e.Event.Msg != nil && e.Event.Msg.Type == "MsgHeartbeat"
		}).(*EventObservation)
		if got.Member != leaderName || got.Event.Msg.FromName != leaderName {
			t.Errorf("heartbeat observed from %s (sent by %s), want %s", got.Member, got.Event.Msg.FromName, leaderName)
		}
		// The heartbeats a member steps are left out (their sender
		// reports each), and not reported as lost: the follower's answer
		// says it stepped one.
		var stepped, gaps int
		awaitObservation(t, obs, &seq, "a follower answering a heartbeat", func(o Observation) bool {
			if _, ok := o.(*GapObservation); ok {
				gaps++
			}
			e, ok := o.(*EventObservation)
			if !ok || e.Event.Msg == nil || (e.Event.Msg.Type != "MsgHeartbeat" && e.Event.Msg.Type != "MsgHeartbeatResp") {
				return false
			}
			if e.Event.Kind == etcd.EventRecv {
				stepped++
			}
			return e.Member != leaderName && e.Event.Kind == etcd.EventSend && e.Event.Msg.Type == "MsgHeartbeatResp"
		})
		if stepped > 0 || gaps > 0 {
			t.Errorf("%d heartbeats stepped were streamed and %d gaps reported; want neither", stepped, gaps)
		}
	})

	t.Run("sends routine traffic on the calm beat", func(t *testing.T) {
		o.SetBeat(CalmBeat)
		defer o.SetBeat(RoutineBeat)
		// The streams are opened again at once; what they bring from the
		// next whole second on comes once a second.
		start := time.Now().Truncate(CalmBeat).Add(CalmBeat)
		end := start.Add(3 * CalmBeat)
		bursts := map[time.Time]bool{}
		last := map[string]uint64{}
		var routine, gaps, again int
		for time.Now().Before(end.Add(200 * time.Millisecond)) {
			var ob Observation
			select {
			case ob = <-obs:
			case <-time.After(time.Until(end.Add(200 * time.Millisecond))):
				continue
			}
			seq = ob.Header().Seq
			if _, ok := ob.(*GapObservation); ok {
				gaps++
			}
			e, ok := ob.(*EventObservation)
			if !ok || !e.Event.Routine() {
				continue
			}
			if e.Event.Seq <= last[e.Member] {
				again++
			}
			last[e.Member] = e.Event.Seq
			if e.At.After(start) && e.At.Before(end) {
				routine++
				bursts[e.At.Truncate(100*time.Millisecond)] = true
			}
		}
		// Three beats; a burst may straddle two 100 ms buckets. At
		// the RoutineBeat there would be twelve.
		if routine == 0 || len(bursts) > 6 {
			t.Errorf("%d routine events in %d bursts over 3 s; want some, in at most 3 (6 buckets)", routine, len(bursts))
		}
		if gaps > 0 || again > 0 {
			t.Errorf("%d gaps and %d events delivered again after the streams were opened anew", gaps, again)
		}
	})

	t.Run("statuses ride on the streams", func(t *testing.T) {
		o.SetBeat(CalmBeat)
		defer o.SetBeat(RoutineBeat)
		// Past the first flush at the new beat, which also ends the
		// reads the streams' reopening asked for.
		settle := time.Now().Truncate(CalmBeat).Add(2 * CalmBeat)
		end := settle.Add(3 * CalmBeat)
		var reads int64
		statuses := map[string]int{}
		for time.Now().Before(end) {
			if reads == 0 && !time.Now().Before(settle) {
				reads = o.reads.Load()
			}
			var ob Observation
			select {
			case ob = <-obs:
			case <-time.After(time.Until(end)):
				continue
			}
			seq = ob.Header().Seq
			if st, ok := ob.(*StatusObservation); ok && ob.Header().At.After(settle) {
				statuses[st.Member]++
			}
		}
		read := o.reads.Load() - reads
		// A status a second from each member's flushes, and none read
		// over HTTP: the steady members' polls and the reads that
		// replication asks for are all answered by the streams.
		for _, p := range c.Peers {
			if statuses[p.Name] < 2 {
				t.Errorf("%d statuses of %s in 3 s at the calm beat, want about 3", statuses[p.Name], p.Name)
			}
		}
		if read > 1 {
			t.Errorf("%d statuses read over HTTP in 3 s of a steady cluster, want none (or one, at an edge)", read)
		}
	})

	victim := (leader + 1) % 3
	victimName := c.Peers[victim].Name
	t.Run("notices a killed member", func(t *testing.T) {
		c.Kill(victim)
		awaitObservation(t, obs, &seq, victimName+" unreachable", func(o Observation) bool {
			u, ok := o.(*UnreachableObservation)
			return ok && u.Member == victimName && u.Err != nil
		})
	})

	t.Run("follows the restarted member", func(t *testing.T) {
		if err := c.Start(victim); err != nil {
			t.Fatal(err)
		}
		awaitObservation(t, obs, &seq, victimName+" starting again", func(o Observation) bool {
			e, ok := o.(*EventObservation)
			return ok && e.Member == victimName && e.Event.Kind == etcd.EventLifecycle && e.Event.Detail == "started"
		})
		awaitObservation(t, obs, &seq, victimName+" following the leader", func(o Observation) bool {
			s, ok := o.(*StatusObservation)
			return ok && s.Member == victimName && s.Status.State == "StateFollower" && s.Status.Leader != "0"
		})
	})

	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Errorf("Run = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	for range obs {
		// Drain: the channel must close.
	}
}

func TestEventCursor(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	tests := []struct {
		name     string
		cur      eventCursor
		event    etcd.Event
		wantOK   bool
		wantLost uint64
	}{
		{"old event before observing began", eventCursor{seq: math.MaxUint64, time: at(10)}, etcd.Event{Seq: 5, Time: at(9)}, false, 0},
		{"first event after observing began", eventCursor{seq: math.MaxUint64, time: at(10)}, etcd.Event{Seq: 7, Time: at(11)}, true, 0},
		{"next event", eventCursor{seq: 7, time: at(11)}, etcd.Event{Seq: 8, Time: at(12)}, true, 0},
		{"replayed event", eventCursor{seq: 7, time: at(11)}, etcd.Event{Seq: 6, Time: at(10)}, false, 0},
		{"same event again", eventCursor{seq: 7, time: at(11)}, etcd.Event{Seq: 7, Time: at(11)}, false, 0},
		{"events dropped in between", eventCursor{seq: 7, time: at(11)}, etcd.Event{Seq: 10, Time: at(12)}, true, 2},
		{"restarted member from its first event", eventCursor{seq: 70, time: at(11)}, etcd.Event{Seq: 1, Time: at(20)}, true, 0},
		{"restarted member whose ring overflowed", eventCursor{seq: 70, time: at(11)}, etcd.Event{Seq: 5, Time: at(20)}, true, 4},
		{"replay from the start", eventCursor{}, etcd.Event{Seq: 1, Time: at(1)}, true, 0},
		{"a series before it", eventCursor{seq: 7, time: at(11)}, etcd.Event{Seq: 11, Time: at(12), Skipped: 3}, true, 0},
		{"a series and events dropped", eventCursor{seq: 7, time: at(11)}, etcd.Event{Seq: 11, Time: at(12), Skipped: 1}, true, 2},
		{"restarted member, its first events a series", eventCursor{seq: 70, time: at(11)}, etcd.Event{Seq: 4, Time: at(20), Skipped: 3}, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := tt.cur
			ok, lost := cur.accept(tt.event)
			if ok != tt.wantOK || lost != tt.wantLost {
				t.Errorf("accept = %v, lost %d; want %v, lost %d", ok, lost, tt.wantOK, tt.wantLost)
			}
			if ok && (cur.seq != tt.event.Seq || !cur.time.Equal(tt.event.Time)) {
				t.Errorf("cursor not moved to the accepted event: %+v", cur)
			}
		})
	}
}

// TestNextLook checks when a member is read next: once per tick while its
// election timer may fill, once per second when steady or dead, and again
// as soon as a steady follower's heartbeats are overdue.
func TestNextLook(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	follower := func(tickMS float64) etcd.Status {
		return etcd.Status{State: "StateFollower", Leader: "a1", HeartbeatTicks: 1, Clock: etcd.ClockStatus{TickIntervalMS: tickMS}}
	}
	noLeader := follower(100)
	noLeader.Leader = "0"
	paused := follower(100)
	paused.Clock.Paused = true
	candidate := etcd.Status{State: "StateCandidate", HeartbeatTicks: 1, Clock: etcd.ClockStatus{TickIntervalMS: 100}}
	leader := etcd.Status{State: "StateLeader", HeartbeatTicks: 1, Clock: etcd.ClockStatus{TickIntervalMS: 100}}
	tests := []struct {
		name      string
		reachable bool
		st        etcd.Status
		heard     time.Time
		fetched   time.Time
		now       time.Time
		want      time.Time
	}{
		{"candidate: every tick", true, candidate, t0, ms(0), ms(0), ms(100)},
		{"candidate, looked late", true, candidate, t0, ms(0), ms(150), ms(150)},
		{"follower without a leader", true, noLeader, ms(0), ms(0), ms(0), ms(100)},
		{"very slow clock", true, etcd.Status{State: "StateCandidate", Clock: etcd.ClockStatus{TickIntervalMS: 10000}}, t0, ms(0), ms(0), ms(1000)},
		{"fast clock", true, etcd.Status{State: "StateCandidate", Clock: etcd.ClockStatus{TickIntervalMS: 10}}, t0, ms(0), ms(0), ms(100)},
		{"leader: once a second", true, leader, t0, ms(0), ms(0), ms(1000)},
		{"paused", true, paused, ms(0), ms(0), ms(0), ms(1000)},
		{"unreachable", false, candidate, t0, ms(0), ms(0), ms(1000)},
		{"leader: on the beat after a second", true, leader, t0, ms(130), ms(130), ms(1250)},
		// beatWindow at 100 ms ticks, one-tick heartbeats: 550 ms (two
		// ticks, the 250 ms RoutineBeat, refreshGap). Looks fall 50 ms
		// after a beat.
		{"steady follower: when beats would be overdue", true, follower(100), ms(0), ms(0), ms(0), ms(800)},
		{"steady follower, beats moved on", true, follower(100), ms(300), ms(500), ms(300), ms(1050)},
		{"steady follower, at least a tick on", true, follower(300), ms(0), ms(600), ms(900), ms(1200)},
		{"steady follower: the slow poll", true, follower(100), ms(900), ms(0), ms(950), ms(1000)},
		{"steady follower, slow poll due", true, follower(100), ms(990), ms(0), ms(1000), ms(1000)},
		{"beats overdue: every tick", true, follower(100), ms(0), ms(300), ms(600), ms(600)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nextLook(tt.reachable, tt.st, tt.heard, tt.fetched, tt.now, RoutineBeat); !got.Equal(tt.want) {
				t.Errorf("nextLook = +%v, want +%v", got.Sub(t0), tt.want.Sub(t0))
			}
		})
	}
}

func TestRoutine(t *testing.T) {
	msg := func(kind, typ string, reject bool) Observation {
		return &EventObservation{Event: etcd.Event{Kind: kind, Msg: &etcd.MessageInfo{Type: typ, Reject: reject}}}
	}
	status := func(state, leader string, elapsed int) Observation {
		return &StatusObservation{Status: etcd.Status{State: state, Leader: leader, ElectionElapsed: elapsed, HeartbeatTicks: 1}}
	}
	tests := []struct {
		name string
		o    Observation
		want bool
	}{
		{"heartbeat sent", msg(etcd.EventSend, "MsgHeartbeat", false), true},
		{"heartbeat answered", msg(etcd.EventSend, "MsgHeartbeatResp", false), true},
		{"append stepped", msg(etcd.EventRecv, "MsgApp", false), true},
		{"read index", msg(etcd.EventSend, "MsgReadIndex", false), true},
		{"append rejected", msg(etcd.EventSend, "MsgAppResp", true), false},
		{"vote", msg(etcd.EventSend, "MsgVote", false), false},
		{"pre-vote answered", msg(etcd.EventRecv, "MsgPreVoteResp", false), false},
		{"heartbeat lost", msg(etcd.EventDrop, "MsgHeartbeat", false), false},
		{"role change", &EventObservation{Event: etcd.Event{Kind: etcd.EventState, State: "StateCandidate"}}, false},
		{"gap", &GapObservation{Lost: 3}, false},
		{"leader's status", status("StateLeader", "a1", 0), true},
		{"steady follower", status("StateFollower", "a1", 1), true},
		{"follower's timer filling", status("StateFollower", "a1", 4), false},
		{"follower without a leader", status("StateFollower", "0", 0), false},
		{"candidate", status("StateCandidate", "0", 0), false},
	}
	for _, tt := range tests {
		if got := Routine(tt.o); got != tt.want {
			t.Errorf("%s: Routine = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// An ended context does not lose an observation there is room for, and
// one that cannot be delivered leaves no gap in Seq.
func TestEmitNumbersOnlyWhatIsDelivered(t *testing.T) {
	o := NewObserver(nil, ObserverOptions{})
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	gap := func(h Observed) Observation { return &GapObservation{Observed: h, Lost: 1} }
	for i := range 50 {
		if !o.emit(ended, "m1", gap) {
			t.Fatalf("emit %d dropped with room in the buffer", i)
		}
	}
	for len(o.out) < cap(o.out) {
		o.emit(context.Background(), "m1", gap)
	}
	if o.emit(ended, "m1", gap) {
		t.Fatal("emit into a full buffer with its context ended reported delivery")
	}
	var last uint64
	for len(o.out) > 0 {
		h := (<-o.out).Header()
		if h.Seq != last+1 {
			t.Fatalf("seq %d follows %d", h.Seq, last)
		}
		last = h.Seq
	}
	o.emit(context.Background(), "m1", gap)
	if h := (<-o.out).Header(); h.Seq != last+1 {
		t.Errorf("after an observation not delivered, seq %d follows %d", h.Seq, last)
	}
}
