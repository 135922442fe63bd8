package uitest

import (
	"fmt"
	"time"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/ui/labstate"
)

// Info returns the cluster.json of a local cluster of n masters.
func Info(name string, n int) *lab.Info {
	info := &lab.Info{Version: 1, Name: name, Runtime: "local",
		Spec: lab.Spec{Name: name, Masters: n, Speed: 1, Runtime: "auto"}}
	for i := 1; i <= n; i++ {
		node := fmt.Sprintf("master-%d", i)
		host := fmt.Sprintf("127.0.0.%d", 10+i)
		info.Nodes = append(info.Nodes, runtime.Node{Name: node, Role: "master", Index: i, Host: host,
			Ports: map[string]int{"etcd-client": 2379, "etcd-peer": 2380}})
		info.Members = append(info.Members, lab.MemberInfo{Name: node, ID: fmt.Sprintf("%x", 0x1000+i),
			PeerURL: "http://" + host + ":2380", ClientURL: "http://" + host + ":2379",
			DebugURL: "http://" + host + ":2380/debug/klab"})
		info.EtcdEndpoints = append(info.EtcdEndpoints, "http://"+host+":2379")
	}
	return info
}

// observations builds the stream a fixture is folded from.
type observations struct {
	st  *labstate.State
	seq uint64
	at  time.Time
}

func (o *observations) header(member string) lab.Observed {
	o.seq++
	o.at = o.at.Add(10 * time.Millisecond)
	return lab.Observed{Seq: o.seq, Member: member, At: o.at}
}

func (o *observations) status(member string, s etcd.Status) {
	o.st.Apply(&lab.StatusObservation{Observed: o.header(member), Status: s})
}

func (o *observations) event(member string, e etcd.Event) {
	e.Time = o.at
	o.st.Apply(&lab.EventObservation{Observed: o.header(member), Event: e})
}

func (o *observations) msg(member, kind, typ, from, to string, term, index uint64, entries int, reject bool) {
	o.event(member, etcd.Event{Member: member, Kind: kind, Msg: &etcd.MessageInfo{
		Type: typ, FromName: from, ToName: to, Term: term, Index: index, Entries: entries, Reject: reject}})
}

// Raft returns a fixed observed cluster of n members (3 or more), folded
// from a fixed stream just after an election: master-1 won term 3 (its
// pre-vote and vote messages are still on screen), a write is being
// replicated, heartbeats flow, and the last follower lags behind and is
// being probed.
func Raft(n int) (*lab.Info, *labstate.State) {
	info := Info("demo", n)
	st := labstate.New(info.Name, info.Members)
	o := &observations{st: st, at: Now}
	id := func(i int) string { return info.Members[i-1].ID }
	name := func(i int) string { return info.Members[i-1].Name }
	clock := func(ticks uint64) etcd.ClockStatus {
		return etcd.ClockStatus{TickIntervalMS: 100, Ticks: ticks}
	}
	base := etcd.Status{ElectionTicks: 10, HeartbeatTicks: 1, FirstIndex: 1}

	// Before: everyone follows master-2 in term 2, at tick 500.
	for i := 1; i <= n; i++ {
		s := base
		s.ID, s.Name, s.State, s.Term, s.Vote, s.Leader = id(i), name(i), "StateFollower", 2, id(2), id(2)
		s.Commit, s.Applied, s.LastIndex, s.Clock = 10, 10, 10, clock(500)
		o.status(name(i), s)
	}
	// master-1's timer runs out first: pre-vote, then vote.
	o.event(name(1), etcd.Event{Kind: etcd.EventLeader, State: "StateFollower", Term: 2, Leader: "0"})
	o.event(name(1), etcd.Event{Kind: etcd.EventState, State: "StatePreCandidate", Term: 2})
	o.event(name(1), etcd.Event{Kind: etcd.EventElection, State: "StatePreCandidate", Term: 2})
	for i := 2; i <= n; i++ {
		o.msg(name(1), etcd.EventSend, "MsgPreVote", name(1), name(i), 3, 10, 0, false)
		o.msg(name(i), etcd.EventRecv, "MsgPreVote", name(1), name(i), 3, 10, 0, false)
		o.msg(name(i), etcd.EventSend, "MsgPreVoteResp", name(i), name(1), 3, 0, 0, i == 2)
		o.msg(name(1), etcd.EventRecv, "MsgPreVoteResp", name(i), name(1), 3, 0, 0, i == 2)
	}
	o.event(name(1), etcd.Event{Kind: etcd.EventElection, State: "StateCandidate", Term: 3})
	for i := 3; i <= n; i++ {
		o.msg(name(1), etcd.EventSend, "MsgVote", name(1), name(i), 3, 10, 0, false)
		o.msg(name(i), etcd.EventRecv, "MsgVote", name(1), name(i), 3, 10, 0, false)
		o.msg(name(i), etcd.EventSend, "MsgVoteResp", name(i), name(1), 3, 0, 0, false)
	}
	o.event(name(1), etcd.Event{Kind: etcd.EventState, State: "StateLeader", Term: 3, Leader: id(1)})
	for i := 2; i <= n; i++ {
		o.event(name(i), etcd.Event{Kind: etcd.EventLeader, State: "StateFollower", Term: 3, Leader: id(1)})
	}
	// A write: appended by the leader, replicated to master-2, still on
	// its way to the last member (which lags and is probed).
	o.msg(name(1), etcd.EventSend, "MsgApp", name(1), name(2), 3, 11, 1, false)
	o.msg(name(2), etcd.EventRecv, "MsgApp", name(1), name(2), 3, 11, 1, false)
	o.msg(name(2), etcd.EventSend, "MsgAppResp", name(2), name(1), 3, 12, 0, false)
	o.msg(name(1), etcd.EventSend, "MsgApp", name(1), name(n), 3, 8, 4, false)
	// After: statuses at tick 512.
	for i := 1; i <= n; i++ {
		s := base
		s.ID, s.Name, s.Term, s.Vote, s.Leader = id(i), name(i), 3, id(1), id(1)
		s.State, s.Commit, s.Applied, s.LastIndex, s.Clock = "StateFollower", 12, 12, 12, clock(512)
		s.ElectionElapsed = i - 1
		switch {
		case i == 1:
			s.State, s.LastIndex = "StateLeader", 13
			s.Progress = map[string]etcd.Progress{}
			for j := 2; j <= n; j++ {
				pr := etcd.Progress{Match: 12, Next: 14, State: "StateReplicate", RecentActive: true}
				if j == n {
					pr = etcd.Progress{Match: 8, Next: 9, State: "StateProbe", RecentActive: true}
				}
				s.Progress[name(j)] = pr
			}
		case i == n:
			s.Commit, s.Applied, s.LastIndex, s.ElectionElapsed = 8, 8, 8, 4
		case i == 2:
			s.LastIndex = 13
		}
		o.status(name(i), s)
	}
	// Heartbeats of the last ticks.
	for t := 0; t < 8; t++ {
		for i := 2; i <= n; i++ {
			o.msg(name(1), etcd.EventSend, "MsgHeartbeat", name(1), name(i), 3, 0, 0, false)
			if t < 7 || i != n {
				o.msg(name(i), etcd.EventSend, "MsgHeartbeatResp", name(i), name(1), 3, 0, 0, false)
			}
		}
	}
	st.SetComponents(componentsOf(info))
	return info, st
}

func componentsOf(info *lab.Info) []runtime.ComponentInfo {
	var out []runtime.ComponentInfo
	for _, m := range info.Members {
		out = append(out, runtime.ComponentInfo{Ref: m.Ref(), State: runtime.StateRunning})
	}
	return out
}

// Killed returns the Raft fixture after its leader was killed: the
// followers hear nothing and their timers fill up.
func Killed(n int) (*lab.Info, *labstate.State) {
	info, st := Raft(n)
	st.Apply(&lab.UnreachableObservation{Observed: lab.Observed{Seq: 10000, Member: "master-1", At: Now}, Err: fmt.Errorf("connection refused")})
	st.SetComponents([]runtime.ComponentInfo{{Ref: info.Members[0].Ref(), State: runtime.StateKilled}})
	for i := 2; i <= n; i++ {
		m := st.Member(info.Members[i-1].Name)
		s := m.Status
		s.ElectionElapsed, s.Clock.Ticks = 7+i, 520
		st.Apply(&lab.StatusObservation{Observed: lab.Observed{Seq: uint64(10000 + i), Member: m.Name, At: Now}, Status: s})
	}
	return info, st
}

// Busy returns the Raft fixture of n members under heavy write traffic:
// the leader has just replicated writes entries to every follower, so the
// state holds as many messages in flight as it keeps.
func Busy(n, writes int) (*lab.Info, *labstate.State) {
	info, st := Raft(n)
	o := &observations{st: st, at: Now.Add(time.Minute), seq: 1 << 20}
	name := func(i int) string { return info.Members[i-1].Name }
	for w := 0; w < writes; w++ {
		index := uint64(13 + w)
		for i := 2; i <= n; i++ {
			o.msg(name(1), etcd.EventSend, "MsgApp", name(1), name(i), 3, index, 1, false)
			o.msg(name(i), etcd.EventRecv, "MsgApp", name(1), name(i), 3, index, 1, false)
			o.msg(name(i), etcd.EventSend, "MsgAppResp", name(i), name(1), 3, index+1, 0, false)
		}
	}
	return info, st
}
