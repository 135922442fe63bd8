package lessons

import (
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/klab-dev/klab/assets/i18n"
)

// LeaderElectedCheck passes when a member leads and at least Members
// members, the leader included, follow it in its term.
//
//	leader-elected: {members: 3}
type LeaderElectedCheck struct {
	// Members is how many members must agree on the leader; 1 (the
	// default) asks only that some member leads.
	Members int
}

// LeaderChangedCheck passes when a member other than the one that led when
// the step began leads, in a higher term: a new election was held and won.
// When no member led at the start, any leader elected since counts.
//
//	leader-changed: {}
type LeaderChangedCheck struct{}

// NoLeaderCheck passes when at least one member has been observed and none
// leads, so nothing can be committed.
//
//	no-leader: {}
type NoLeaderCheck struct{}

// MemberStateCheck passes when a member is in a state.
//
//	member-state: {member: master-3, state: down}
type MemberStateCheck struct {
	// Member is the member's name, its node's: master-1.
	Member string
	State  WantedState
}

// MembersRunningCheck passes when at least Count members have a raft role
// (they are neither stopped, paused nor unreachable).
//
//	members-running: {count: 3}
type MembersRunningCheck struct{ Count int }

// WantedState is a member state a check asks for: one of the raft roles,
// or a word for several states.
type WantedState string

// The states member-state accepts.
const (
	WantLeader       WantedState = "leader"
	WantFollower     WantedState = "follower"
	WantCandidate    WantedState = "candidate"
	WantPreCandidate WantedState = "pre-candidate"
	WantPaused       WantedState = "paused"
	// WantDown is stopped, killed, or unreachable.
	WantDown WantedState = "down"
	// WantRunning is any raft role.
	WantRunning WantedState = "running"
)

var wantedStates = []string{
	string(WantLeader), string(WantFollower), string(WantCandidate), string(WantPreCandidate),
	string(WantPaused), string(WantDown), string(WantRunning),
}

// matches reports whether a member in state s is in the wanted state.
func (w WantedState) matches(s MemberState) bool {
	switch w {
	case WantDown:
		return s.down()
	case WantRunning:
		return s.running()
	}
	return string(w) == string(s)
}

// stateName is the message naming a member state (observed or wanted), so
// that it reads in the student's language.
func stateName(s string) i18n.Message {
	switch s {
	case string(MemberLeader):
		return i18n.M("lessons.state.leader")
	case string(MemberFollower):
		return i18n.M("lessons.state.follower")
	case string(MemberCandidate):
		return i18n.M("lessons.state.candidate")
	case string(MemberPreCandidate):
		return i18n.M("lessons.state.pre-candidate")
	case string(MemberPaused):
		return i18n.M("lessons.state.paused")
	case string(MemberStopped):
		return i18n.M("lessons.state.stopped")
	case string(MemberUnreachable):
		return i18n.M("lessons.state.unreachable")
	case string(WantDown):
		return i18n.M("lessons.state.down")
	case string(WantRunning):
		return i18n.M("lessons.state.running")
	}
	return i18n.M("lessons.state.other", s)
}

func (LeaderElectedCheck) Kind() CheckKind  { return KindLeaderElected }
func (LeaderChangedCheck) Kind() CheckKind  { return KindLeaderChanged }
func (NoLeaderCheck) Kind() CheckKind       { return KindNoLeader }
func (MemberStateCheck) Kind() CheckKind    { return KindMemberState }
func (MembersRunningCheck) Kind() CheckKind { return KindMembersRunning }

func (LeaderElectedCheck) Needs() Needs  { return Needs{Members: true} }
func (LeaderChangedCheck) Needs() Needs  { return Needs{Members: true} }
func (NoLeaderCheck) Needs() Needs       { return Needs{Members: true} }
func (MemberStateCheck) Needs() Needs    { return Needs{Members: true} }
func (MembersRunningCheck) Needs() Needs { return Needs{Members: true} }

func (c LeaderElectedCheck) Describe() []i18n.Message {
	if c.Members <= 1 {
		return []i18n.Message{i18n.M("lessons.want.leader-elected")}
	}
	return []i18n.Message{i18n.M("lessons.want.leader-followed", c.Members)}
}

func (LeaderChangedCheck) Describe() []i18n.Message {
	return []i18n.Message{i18n.M("lessons.want.leader-changed")}
}

func (NoLeaderCheck) Describe() []i18n.Message {
	return []i18n.Message{i18n.M("lessons.want.no-leader")}
}

func (c MemberStateCheck) Describe() []i18n.Message {
	return []i18n.Message{i18n.M("lessons.want.member-state", c.Member, stateName(string(c.State)))}
}

func (c MembersRunningCheck) Describe() []i18n.Message {
	return []i18n.Message{i18n.M("lessons.want.members-running", c.Count)}
}

func (c LeaderElectedCheck) evaluate(_, now *world) Verdict {
	leaders := now.leaders()
	if len(leaders) == 0 {
		return wait(i18n.M("lessons.check.no-leader-yet"))
	}
	// Of two members that say they lead, the one in the higher term is
	// the real one; the other has not heard yet.
	l := leaders[0]
	agree := 0
	for _, m := range now.members {
		if m.Member == l.Member || m.State.running() && m.Leader == l.Member && m.Term == l.Term {
			agree++
		}
	}
	msg := i18n.M("lessons.check.leader-followed", l.Member, l.Term, agree, len(now.members))
	if agree >= max(c.Members, 1) {
		return pass(msg)
	}
	return wait(msg)
}

func (LeaderChangedCheck) evaluate(start, now *world) Verdict {
	old, hadLeader := start.leader()
	if !hadLeader {
		base := start.maxTerm()
		for _, l := range now.leaders() {
			if l.Term >= base {
				return pass(i18n.M("lessons.check.leader-elected-in", l.Member, l.Term))
			}
		}
		return wait(i18n.M("lessons.check.no-leader-yet"))
	}
	for _, l := range now.leaders() {
		if l.Member != old.Member && l.Term > old.Term {
			return pass(i18n.M("lessons.check.leader-took-over", l.Member, old.Member, l.Term))
		}
	}
	if m, ok := now.members[old.Member]; ok && m.State == MemberLeader {
		return wait(i18n.M("lessons.check.leader-still", old.Member, m.Term))
	}
	return wait(i18n.M("lessons.check.leader-gone", old.Member, old.Term))
}

func (NoLeaderCheck) evaluate(_, now *world) Verdict {
	if len(now.members) == 0 {
		return wait(i18n.M("lessons.check.no-members"))
	}
	if l, ok := now.leader(); ok {
		return wait(i18n.M("lessons.check.leader-still", l.Member, l.Term))
	}
	return pass(i18n.M("lessons.check.no-leader"))
}

func (c MemberStateCheck) evaluate(_, now *world) Verdict {
	m, ok := now.members[c.Member]
	if !ok {
		return wait(i18n.M("lessons.check.member-unseen", c.Member))
	}
	msg := i18n.M("lessons.check.member-is", c.Member, stateName(string(m.State)), m.Term)
	if c.State.matches(m.State) {
		return pass(msg)
	}
	return wait(msg)
}

func (c MembersRunningCheck) evaluate(_, now *world) Verdict {
	n := now.running()
	msg := i18n.M("lessons.check.members-running", n, len(now.members))
	if n >= c.Count {
		return pass(msg)
	}
	return wait(msg)
}

// memberName is a member's name: its node's, master-N.
var memberName = regexp.MustCompile(`^master-[1-9][0-9]*$`)

func (d *decoder) leaderElected(n *yaml.Node, path string) Check {
	f := d.params(n, path, "members")
	if f == nil {
		return nil
	}
	return LeaderElectedCheck{Members: f.integer("members", false, 1, 1, maxMasters)}
}

func (d *decoder) memberState(n *yaml.Node, path string) Check {
	f := d.params(n, path, "member", "state")
	if f == nil {
		return nil
	}
	c := MemberStateCheck{}
	member, mn := f.str("member", true)
	if mn != nil && member != "" && !memberName.MatchString(member) {
		d.fail(mn, field(path, "member"), i18n.M("lessons.err.bad-member", member))
	}
	c.Member = member
	state, sn := f.str("state", true)
	if sn != nil && state != "" && !contains(wantedStates, state) {
		d.fail(sn, field(path, "state"), i18n.M("lessons.err.bad-state", state, strings.Join(wantedStates, ", ")))
	}
	c.State = WantedState(state)
	return c
}

func (d *decoder) membersRunning(n *yaml.Node, path string) Check {
	f := d.params(n, path, "count")
	if f == nil {
		return nil
	}
	return MembersRunningCheck{Count: f.integer("count", true, 1, 1, maxMasters)}
}
