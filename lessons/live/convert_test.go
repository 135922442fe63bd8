package live

import (
	"errors"
	"reflect"
	"testing"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/lessons"
)

var testMembers = []lab.MemberInfo{
	{Name: "master-1", ID: "8e9e05c52164694d"},
	{Name: "master-2", ID: "91bc3c398fb3c146"},
	{Name: "master-3", ID: "fd422379fda50e48"},
}

func TestConvert(t *testing.T) {
	header := func(member string) lab.Observed { return lab.Observed{Seq: 1, Member: member} }
	event := func(member string, e etcd.Event) lab.Observation {
		return &lab.EventObservation{Observed: header(member), Event: e}
	}
	tests := []struct {
		name string
		in   lab.Observation
		want []lessons.Observation
	}{
		{
			name: "a follower's status names its leader and its clock",
			in: &lab.StatusObservation{Observed: header("master-2"), Status: etcd.Status{
				State: "StateFollower", Term: 4, Leader: "8e9e05c52164694d",
				Clock: etcd.ClockStatus{TickIntervalMS: 100},
			}},
			want: []lessons.Observation{
				lessons.MemberObserved{Member: "master-2", State: lessons.MemberFollower, Term: 4, Leader: "master-1"},
				lessons.ClockObserved{Member: "master-2", Slowdown: 1},
			},
		},
		{
			name: "a slowed, paused clock",
			in: &lab.StatusObservation{Observed: header("master-1"), Status: etcd.Status{
				State: "StateLeader", Term: 7, Leader: "8e9e05c52164694d",
				Clock: etcd.ClockStatus{TickIntervalMS: 1000, Paused: true},
			}},
			want: []lessons.Observation{
				lessons.MemberObserved{Member: "master-1", State: lessons.MemberLeader, Term: 7, Leader: "master-1"},
				lessons.ClockObserved{Member: "master-1", Slowdown: 10, Paused: true},
			},
		},
		{
			name: "a clock between two speeds rounds, and never reads faster than real time",
			in: &lab.StatusObservation{Observed: header("master-3"), Status: etcd.Status{
				State: "StatePreCandidate", Term: 3, Leader: "0",
				Clock: etcd.ClockStatus{TickIntervalMS: 40},
			}},
			want: []lessons.Observation{
				lessons.MemberObserved{Member: "master-3", State: lessons.MemberPreCandidate, Term: 3},
				lessons.ClockObserved{Member: "master-3", Slowdown: 1},
			},
		},
		{
			name: "a stopped member follows nobody and still reports its clock",
			in: &lab.StatusObservation{Observed: header("master-3"), Status: etcd.Status{
				State: "stopped", Term: 3, Leader: "8e9e05c52164694d",
				Clock: etcd.ClockStatus{TickIntervalMS: 200},
			}},
			want: []lessons.Observation{
				lessons.MemberObserved{Member: "master-3", State: lessons.MemberStopped, Term: 3},
				lessons.ClockObserved{Member: "master-3", Slowdown: 2},
			},
		},
		{
			name: "a state nobody knows and no clock give nothing",
			in:   &lab.StatusObservation{Observed: header("master-1"), Status: etcd.Status{State: "StateConfused"}},
			want: nil,
		},
		{
			name: "a member that does not answer is unreachable",
			in:   &lab.UnreachableObservation{Observed: header("master-2"), Err: errors.New("connection refused")},
			want: []lessons.Observation{lessons.MemberObserved{Member: "master-2", State: lessons.MemberUnreachable}},
		},
		{
			name: "a leader event names the leader",
			in:   event("master-3", etcd.Event{Kind: etcd.EventLeader, State: "StateFollower", Term: 5, Leader: "91bc3c398fb3c146"}),
			want: []lessons.Observation{lessons.MemberObserved{Member: "master-3", State: lessons.MemberFollower, Term: 5, Leader: "master-2"}},
		},
		{
			name: "a state event that lost its leader",
			in:   event("master-1", etcd.Event{Kind: etcd.EventState, State: "StateFollower", Term: 5, Leader: "0"}),
			want: []lessons.Observation{lessons.MemberObserved{Member: "master-1", State: lessons.MemberFollower, Term: 5}},
		},
		{
			name: "an election event has no leader by nature",
			in:   event("master-1", etcd.Event{Kind: etcd.EventElection, State: "StateCandidate", Term: 6}),
			want: []lessons.Observation{lessons.MemberObserved{Member: "master-1", State: lessons.MemberCandidate, Term: 6}},
		},
		{
			name: "a membership state event, which does not say whom the member follows, waits for the status",
			in:   event("master-1", etcd.Event{Kind: etcd.EventState, State: "StateFollower", Term: 5, Detail: "membership: ConfChangeAddNode 1"}),
			want: nil,
		},
		{
			name: "a clock event",
			in:   event("master-2", etcd.Event{Kind: etcd.EventClock, Detail: "interval 1000ms paused=false step=0"}),
			want: []lessons.Observation{lessons.ClockObserved{Member: "master-2", Slowdown: 10}},
		},
		{
			name: "a clock event of a step while paused",
			in:   event("master-2", etcd.Event{Kind: etcd.EventClock, Detail: "interval 100ms paused=true step=5"}),
			want: []lessons.Observation{lessons.ClockObserved{Member: "master-2", Slowdown: 1, Paused: true}},
		},
		{
			name: "a clock event that cannot be read gives nothing",
			in:   event("master-2", etcd.Event{Kind: etcd.EventClock, Detail: "warp speed"}),
			want: nil,
		},
		{
			name: "a sent message",
			in: event("master-1", etcd.Event{Kind: etcd.EventSend, Msg: &etcd.MessageInfo{
				Type: "MsgVote", From: "8e9e05c52164694d", To: "fd422379fda50e48", ToName: "master-3", Term: 6,
			}}),
			want: []lessons.Observation{lessons.MessageObserved{From: "master-1", To: "master-3", Type: "MsgVote", Term: 6}},
		},
		{
			name: "a sent message without the peer's name is named from cluster.json",
			in: event("master-1", etcd.Event{Kind: etcd.EventSend, Msg: &etcd.MessageInfo{
				Type: "MsgApp", From: "8e9e05c52164694d", To: "91bc3c398fb3c146", Term: 6,
			}}),
			want: []lessons.Observation{lessons.MessageObserved{From: "master-1", To: "master-2", Type: "MsgApp", Term: 6}},
		},
		{
			name: "a received message is the sent one seen from the other end",
			in: event("master-3", etcd.Event{Kind: etcd.EventRecv, Msg: &etcd.MessageInfo{
				Type: "MsgVote", From: "8e9e05c52164694d", To: "fd422379fda50e48", Term: 6,
			}}),
			want: nil,
		},
		{
			name: "a message the transport could not deliver",
			in: event("master-1", etcd.Event{Kind: etcd.EventUnreachable, Msg: &etcd.MessageInfo{
				Type: "MsgHeartbeat", From: "8e9e05c52164694d", To: "fd422379fda50e48", Term: 6,
			}}),
			want: nil,
		},
		{
			name: "lifecycle events wait for the status",
			in:   event("master-1", etcd.Event{Kind: etcd.EventLifecycle, Detail: "paused"}),
			want: nil,
		},
		{
			name: "a gap",
			in:   &lab.GapObservation{Observed: header("master-1"), Lost: 12},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Convert(tt.in, testMembers)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Convert =\n  %#v\nwant\n  %#v", got, tt.want)
			}
		})
	}
}

func TestMemberName(t *testing.T) {
	tests := []struct{ id, want string }{
		{"", ""},
		{"0", ""},
		{"91bc3c398fb3c146", "master-2"},
		{"abc", "abc"},
	}
	for _, tt := range tests {
		if got := memberName(tt.id, testMembers); got != tt.want {
			t.Errorf("memberName(%q) = %q, want %q", tt.id, got, tt.want)
		}
	}
}

func TestWithCluster(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"chaos", []string{"klab", "chaos", "kill", "leader"}, []string{"klab", "chaos", "--name=lab", "kill", "leader"}},
		{"clock", []string{"klab", "clock", "speed", "10"}, []string{"klab", "clock", "--name=lab", "speed", "10"}},
		{"status", []string{"klab", "status"}, []string{"klab", "status", "--name=lab"}},
		{"etcdctl", []string{"klab", "etcdctl", "put", "k", "v"}, []string{"klab", "etcdctl", "--name=lab", "put", "k", "v"}},
		{"kubectl", []string{"klab", "kubectl", "get", "nodes"}, []string{"klab", "kubectl", "--name=lab", "get", "nodes"}},
		{"kubectl's own --name", []string{"klab", "kubectl", "expose", "deploy/web", "--name", "web"},
			[]string{"klab", "kubectl", "--name=lab", "expose", "deploy/web", "--name", "web"}},
		{"a cluster named already", []string{"klab", "chaos", "kill", "leader", "--name", "other"},
			[]string{"klab", "chaos", "kill", "leader", "--name", "other"}},
		{"kubectl naming one already", []string{"klab", "kubectl", "--name=other", "get", "pods"},
			[]string{"klab", "kubectl", "--name=other", "get", "pods"}},
		{"etcdctl's key after --", []string{"klab", "etcdctl", "put", "--", "--name", "x"},
			[]string{"klab", "etcdctl", "--name=lab", "put", "--", "--name", "x"}},
		{"a command without a cluster", []string{"klab", "lessons", "list"}, []string{"klab", "lessons", "list"}},
		{"not klab", []string{"kubectl", "get", "pods"}, []string{"kubectl", "get", "pods"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]string(nil), tt.args...)
			got := WithCluster(in, "lab")
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("WithCluster(%q) = %q, want %q", tt.args, got, tt.want)
			}
			if !reflect.DeepEqual(in, tt.args) {
				t.Errorf("WithCluster changed its argument to %q", in)
			}
		})
	}
}
