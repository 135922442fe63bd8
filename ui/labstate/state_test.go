package labstate

import (
	"errors"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func newState() *State {
	return New("demo", []lab.MemberInfo{{Name: "m1", ID: "a1"}, {Name: "m2", ID: "a2"}, {Name: "m3", ID: "a3"}})
}

func status(member, state string, term, ticks uint64) lab.Observation {
	return &lab.StatusObservation{Observed: lab.Observed{Member: member, At: t0},
		Status: etcd.Status{Name: member, State: state, Term: term, Leader: "a1", Clock: etcd.ClockStatus{TickIntervalMS: 100, Ticks: ticks}}}
}

func msg(member, kind, typ, from, to string) lab.Observation {
	return &lab.EventObservation{Observed: lab.Observed{Member: member, At: t0},
		Event: etcd.Event{Member: member, Kind: kind, Time: t0, Msg: &etcd.MessageInfo{Type: typ, FromName: from, ToName: to, Term: 2, Index: 5}}}
}

// beats makes a heartbeat's report stand for n (a stream's fold).
func beats(o lab.Observation, n int) lab.Observation {
	o.(*lab.EventObservation).Event.Beats = n
	return o
}

func event(member, kind, state string, term uint64, leader string) lab.Observation {
	return &lab.EventObservation{Observed: lab.Observed{Member: member, At: t0},
		Event: etcd.Event{Member: member, Kind: kind, Time: t0, State: state, Term: term, Leader: leader}}
}

func TestApplyMessages(t *testing.T) {
	tests := []struct {
		name          string
		obs           []lab.Observation
		wantMsgs      int
		wantReceived  bool
		wantLost      string
		wantBeats     int
		wantResponses int
	}{
		{"send then receive is one message", []lab.Observation{
			msg("m1", etcd.EventSend, "MsgVote", "m1", "m2"), msg("m2", etcd.EventRecv, "MsgVote", "m1", "m2"),
		}, 1, true, "", 0, 0},
		{"receive reported before send is one message", []lab.Observation{
			msg("m2", etcd.EventRecv, "MsgApp", "m1", "m2"), msg("m1", etcd.EventSend, "MsgApp", "m1", "m2"),
		}, 1, true, "", 0, 0},
		{"sent only is in flight", []lab.Observation{
			msg("m1", etcd.EventSend, "MsgApp", "m1", "m2"),
		}, 1, false, "", 0, 0},
		{"dropped by a partition", []lab.Observation{
			msg("m1", etcd.EventSend, "MsgApp", "m1", "m3"), msg("m1", etcd.EventDrop, "MsgApp", "m1", "m3"),
		}, 1, false, etcd.EventDrop, 0, 0},
		{"two sends are two messages", []lab.Observation{
			msg("m1", etcd.EventSend, "MsgApp", "m1", "m2"), msg("m1", etcd.EventSend, "MsgApp", "m1", "m2"),
		}, 2, false, "", 0, 0},
		{"heartbeats are counted once each, not drawn", []lab.Observation{
			msg("m1", etcd.EventSend, "MsgHeartbeat", "m1", "m2"), msg("m2", etcd.EventRecv, "MsgHeartbeat", "m1", "m2"),
			msg("m2", etcd.EventSend, "MsgHeartbeatResp", "m2", "m1"), msg("m1", etcd.EventRecv, "MsgHeartbeatResp", "m2", "m1"),
			msg("m1", etcd.EventSend, "MsgHeartbeat", "m1", "m2"),
		}, 0, false, "", 2, 1},
		{"a folded report counts every heartbeat it stands for", []lab.Observation{
			beats(msg("m1", etcd.EventSend, "MsgHeartbeat", "m1", "m2"), 4),
			beats(msg("m2", etcd.EventSend, "MsgHeartbeatResp", "m2", "m1"), 3),
		}, 0, false, "", 4, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newState()
			for _, o := range tt.obs {
				s.Apply(o)
			}
			if len(s.Messages) != tt.wantMsgs {
				t.Fatalf("messages = %+v, want %d", s.Messages, tt.wantMsgs)
			}
			if tt.wantMsgs > 0 {
				last := s.Messages[len(s.Messages)-1]
				if last.Received != tt.wantReceived || last.Lost != tt.wantLost || !last.Sent && tt.wantLost == "" && tt.wantReceived {
					t.Errorf("message = %+v", last)
				}
			}
			beats, resps := 0, 0
			for i := range s.Heartbeats {
				beats += s.Heartbeats[i].Beats()
				resps += s.Heartbeats[i].Responses()
			}
			if beats != tt.wantBeats || resps != tt.wantResponses {
				t.Errorf("heartbeats %d/%d, want %d/%d", beats, resps, tt.wantBeats, tt.wantResponses)
			}
		})
	}
}

func TestMessagesFadeWithTheRaftClock(t *testing.T) {
	s := newState()
	s.Apply(status("m1", "StateLeader", 2, 100))
	s.Apply(msg("m1", etcd.EventSend, "MsgApp", "m1", "m2"))
	s.Apply(status("m1", "StateLeader", 2, 100+MessageTicks))
	if len(s.Messages) != 1 {
		t.Fatalf("message gone after %d ticks, want it kept until then", MessageTicks)
	}
	s.Apply(status("m1", "StateLeader", 2, 100+MessageTicks+1))
	if len(s.Messages) != 0 {
		t.Errorf("message kept after %d ticks", MessageTicks+1)
	}
}

func TestTicksSurviveARestart(t *testing.T) {
	s := newState()
	s.Apply(status("m2", "StateFollower", 2, 500))
	s.Apply(status("m2", "StateFollower", 2, 510))
	if s.Ticks != 10 {
		t.Fatalf("ticks = %v, want 10", s.Ticks)
	}
	// m2 restarts and counts from 0 again.
	s.Apply(status("m2", "StateFollower", 2, 0))
	s.Apply(status("m2", "StateFollower", 2, 3))
	if s.Ticks != 13 {
		t.Errorf("ticks after restart = %v, want 13", s.Ticks)
	}
}

func TestRolesAndLeader(t *testing.T) {
	s := newState()
	s.Apply(status("m1", "StateLeader", 2, 1))
	s.Apply(status("m2", "StateLeader", 3, 1)) // the newer term wins
	s.Apply(status("m3", "StateFollower", 3, 1))
	if l := s.Leader(); l == nil || l.Name != "m2" {
		t.Fatalf("leader = %+v, want m2", l)
	}
	s.Apply(&lab.UnreachableObservation{Observed: lab.Observed{Member: "m2"}, Err: errors.New("refused")})
	s.SetComponents([]runtime.ComponentInfo{{Ref: runtime.Ref{Node: "m2", Component: "etcd"}, State: runtime.StateKilled}})
	if got := s.Member("m2").Role(); got != RoleKilled {
		t.Errorf("m2 role = %s, want killed", got)
	}
	if l := s.Leader(); l == nil || l.Name != "m1" {
		t.Errorf("leader after m2 died = %+v, want m1 (it still believes it leads)", l)
	}
	if s.Term() != 3 {
		t.Errorf("term = %d, want 3", s.Term())
	}
}

func TestNotesTellTheElectionOnce(t *testing.T) {
	s := newState()
	for _, o := range []lab.Observation{
		event("m1", etcd.EventState, "StatePreCandidate", 2, "0"),
		event("m1", etcd.EventElection, "StatePreCandidate", 2, ""),
		event("m1", etcd.EventState, "StateCandidate", 3, "0"),
		event("m1", etcd.EventElection, "StateCandidate", 3, ""),
		event("m1", etcd.EventState, "StateLeader", 3, "a1"),
		event("m1", etcd.EventLeader, "StateLeader", 3, "a1"),
		event("m2", etcd.EventLeader, "StateFollower", 3, "a1"),
	} {
		s.Apply(o)
	}
	want := []NoteKind{NoteElection, NoteElection, NoteState, NoteLeader}
	if len(s.Notes) != len(want) {
		t.Fatalf("notes = %+v, want kinds %v", s.Notes, want)
	}
	for i, k := range want {
		if s.Notes[i].Kind != k {
			t.Errorf("note %d = %s, want %s", i, s.Notes[i].Kind, k)
		}
	}
	if n := s.Notes[3]; n.Member != "m2" || n.Leader != "m1" {
		t.Errorf("leader note = %+v, want m2 following m1", n)
	}
}

// TestHeartbeatResetsFollowerTimer: a follower that answers its leader's
// heartbeat (or steps an append) has reset its election timer, as raft's
// stepFollower does, even though its status was read before.
func TestHeartbeatResetsFollowerTimer(t *testing.T) {
	filling := func(member string, elapsed int) lab.Observation {
		o := status(member, "StateFollower", 2, 100).(*lab.StatusObservation)
		o.Status.ElectionElapsed = elapsed
		return o
	}
	tests := []struct {
		name string
		obs  lab.Observation
		want int
	}{
		{"answered a heartbeat", msg("m2", etcd.EventSend, "MsgHeartbeatResp", "m2", "m1"), 0},
		{"answered an append", msg("m2", etcd.EventSend, "MsgAppResp", "m2", "m1"), 0},
		{"stepped an append", msg("m2", etcd.EventRecv, "MsgApp", "m1", "m2"), 0},
		{"sent a vote", msg("m2", etcd.EventSend, "MsgVote", "m2", "m1"), 6},
		{"a heartbeat of an older term", func() lab.Observation {
			o := msg("m2", etcd.EventSend, "MsgHeartbeatResp", "m2", "m1").(*lab.EventObservation)
			o.Event.Msg.Term = 1
			return o
		}(), 6},
	}
	for _, tt := range tests {
		st := newState()
		st.Apply(filling("m2", 6))
		st.Apply(tt.obs)
		if got := st.Member("m2").Status.ElectionElapsed; got != tt.want {
			t.Errorf("%s: election elapsed %d, want %d", tt.name, got, tt.want)
		}
	}
}
