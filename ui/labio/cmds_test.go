package labio

import (
	"testing"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/lab"
)

func TestRoutine(t *testing.T) {
	msg := func(kind, typ string, reject bool) lab.Observation {
		return &lab.EventObservation{Event: etcd.Event{Kind: kind, Msg: &etcd.MessageInfo{Type: typ, Reject: reject}}}
	}
	status := func(state, leader string, elapsed int) lab.Observation {
		return &lab.StatusObservation{Status: etcd.Status{State: state, Leader: leader, ElectionElapsed: elapsed, HeartbeatTicks: 1}}
	}
	tests := []struct {
		name string
		o    lab.Observation
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
		{"role change", &lab.EventObservation{Event: etcd.Event{Kind: etcd.EventState, State: "StateCandidate"}}, false},
		{"gap", &lab.GapObservation{Lost: 3}, false},
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
