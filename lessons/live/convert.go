package live

import (
	"fmt"
	"math"
	"time"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/lessons"
)

// noMember is how etcd writes "no member" in a hex member ID (raft.None).
const noMember = "0"

// Convert turns one observation of cluster/lab's Observer into what the
// lesson engine reads, naming members as cluster.json does (members lists
// them, with their hex IDs):
//
//   - a status gives the member's state, term and leader, and its clock;
//   - a member that stopped answering gives MemberUnreachable;
//   - a state, leader or election event gives the member's state; a clock
//     event its clock; a send event the message sent.
//
// Everything else gives nothing: a recv event is a sent message seen from
// the other end, which must not be counted twice; drops, snapshots,
// lifecycle events and gaps do not bear on any check, and the status that
// the Observer fetches after each event says what they changed.
func Convert(o lab.Observation, members []lab.MemberInfo) []lessons.Observation {
	switch o := o.(type) {
	case *lab.StatusObservation:
		return convertStatus(o.Member, o.Status, members)
	case *lab.UnreachableObservation:
		return []lessons.Observation{lessons.MemberObserved{Member: o.Member, State: lessons.MemberUnreachable}}
	case *lab.EventObservation:
		return convertEvent(o.Member, o.Event, members)
	}
	return nil
}

func convertStatus(member string, st etcd.Status, members []lab.MemberInfo) []lessons.Observation {
	var out []lessons.Observation
	if state, ok := lessons.MemberStateOf(st.State); ok {
		m := lessons.MemberObserved{Member: member, State: state, Term: st.Term}
		if state != lessons.MemberStopped {
			m.Leader = memberName(st.Leader, members)
		}
		out = append(out, m)
	}
	if c, ok := clockOf(member, st.Clock.TickIntervalMS, st.Clock.Paused); ok {
		out = append(out, c)
	}
	return out
}

func convertEvent(member string, e etcd.Event, members []lab.MemberInfo) []lessons.Observation {
	switch e.Kind {
	case etcd.EventState, etcd.EventLeader, etcd.EventElection:
		state, ok := lessons.MemberStateOf(e.State)
		if !ok {
			return nil
		}
		// A candidate has no leader; any other member's event must say
		// whom it follows, or it would read as "no leader" until the next
		// status. (A membership change is reported as a state event
		// without one.)
		candidate := state == lessons.MemberCandidate || state == lessons.MemberPreCandidate
		if e.Leader == "" && !candidate {
			return nil
		}
		return []lessons.Observation{lessons.MemberObserved{
			Member: member, State: state, Term: e.Term, Leader: memberName(e.Leader, members),
		}}
	case etcd.EventClock:
		var (
			intervalMS float64
			paused     bool
			step       int
		)
		// The member writes "interval %.0fms paused=%v step=%d".
		if _, err := fmt.Sscanf(e.Detail, "interval %gms paused=%t step=%d", &intervalMS, &paused, &step); err != nil {
			return nil
		}
		if c, ok := clockOf(member, intervalMS, paused); ok {
			return []lessons.Observation{c}
		}
	case etcd.EventSend:
		if e.Msg == nil {
			return nil
		}
		to := e.Msg.ToName
		if to == "" {
			to = memberName(e.Msg.To, members)
		}
		return []lessons.Observation{lessons.MessageObserved{From: member, To: to, Type: e.Msg.Type, Term: e.Msg.Term, Count: e.Beats}}
	}
	return nil
}

// clockOf describes a raft clock; ok is false when the member gave no tick
// interval.
func clockOf(member string, intervalMS float64, paused bool) (lessons.ClockObserved, bool) {
	if !(intervalMS > 0) {
		return lessons.ClockObserved{}, false
	}
	return lessons.ClockObserved{Member: member, Slowdown: slowdown(intervalMS), Paused: paused}, true
}

// slowdown is how many times slower than etcd's 100 ms tick a clock runs,
// rounded, and never below 1: klab clock does not run raft faster than
// real time.
func slowdown(intervalMS float64) int {
	base := float64(lab.BaseTick) / float64(time.Millisecond)
	return max(1, int(math.Round(intervalMS/base)))
}

// memberName returns the name of the member with the hex ID id, "" for no
// member. An ID that names no member of the list (which cluster.json
// should never allow) is kept as it is, so that a follower still reads as
// following someone.
func memberName(id string, members []lab.MemberInfo) string {
	if id == "" || id == noMember {
		return ""
	}
	for _, m := range members {
		if m.ID == id {
			return m.Name
		}
	}
	return id
}
