// Package labstate folds the Observer's stream into the picture the views
// draw: each etcd member's last known status, the raft messages recently
// sent between members, and the notable things that happened (elections,
// leader changes, members stopping and starting).
//
// State is a plain value updated by Apply from the UI's Update loop, so
// views are pure functions of it and tests can build one by hand.
//
// Time on screen is measured in raft ticks, not wall time: a message fades
// after MessageTicks ticks of the cluster's own clock, so that slowing the
// clock down slows the fading too, pausing it freezes the picture, and
// stepping it one tick moves the picture by one tick.
package labstate

import (
	"slices"
	"strings"
	"time"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
)

// Retention, in raft ticks and counts.
const (
	// MessageTicks is how long a message stays on screen: three seconds
	// at etcd's default 100 ms tick, long enough to read a vote.
	MessageTicks = 30
	// HeartbeatTicks is the window over which heartbeats are counted.
	HeartbeatTicks = 10
	maxMessages    = 256
	maxNotes       = 64
)

// Roles and states a member is shown in. The first four are raft's roles;
// the others say why a member has none.
const (
	RoleLeader       = "leader"
	RoleFollower     = "follower"
	RoleCandidate    = "candidate"
	RolePreCandidate = "pre-candidate"
	RolePaused       = "paused"
	RoleStopped      = "stopped"
	RoleKilled       = "killed"
	RoleExited       = "exited"
	RoleUnreachable  = "unreachable"
	RoleUnknown      = "unknown"
)

// Member is one etcd member as last observed.
type Member struct {
	Name string
	ID   string
	// Status is the member's last answer; HasStatus says whether there
	// was one. A member that stops answering keeps its last status so
	// the view can still show where its log ended.
	Status    etcd.Status
	HasStatus bool
	Reachable bool
	// Err is why the member does not answer.
	Err string
	// Runtime is what the runtime reports about the member's component
	// ("running", "killed", ...), when known.
	Runtime runtime.State

	// tickBase converts the member's own tick counter, which restarts
	// with the member, into the lab's tick count.
	tickBase  float64
	lastTicks uint64
	seenTicks bool
}

// Role returns the member's raft role, or why it has none.
func (m *Member) Role() string {
	if !m.Reachable {
		switch m.Runtime {
		case runtime.StateKilled:
			return RoleKilled
		case runtime.StateStopped:
			return RoleStopped
		case runtime.StateExited:
			return RoleExited
		case runtime.StatePaused:
			return RolePaused
		}
		if m.HasStatus || m.Err != "" {
			return RoleUnreachable
		}
		return RoleUnknown
	}
	return RoleOf(m.Status.State)
}

// RoleOf turns a raft state name ("StateLeader") into a role.
func RoleOf(raftState string) string {
	switch raftState {
	case "StateLeader":
		return RoleLeader
	case "StateFollower":
		return RoleFollower
	case "StateCandidate":
		return RoleCandidate
	case "StatePreCandidate":
		return RolePreCandidate
	case "paused":
		return RolePaused
	case "stopped":
		return RoleStopped
	}
	return strings.ToLower(raftState)
}

// Running reports whether the member answers and takes part in raft.
func (m *Member) Running() bool {
	return m.Reachable && m.Status.State != "paused" && m.Status.State != "stopped"
}

// Health returns the member's health as klab status words it.
func (m *Member) Health() string {
	switch {
	case !m.Reachable:
		return lab.HealthUnreachable
	case m.Status.State == "paused" || m.Runtime == runtime.StatePaused:
		return lab.HealthPaused
	case m.Status.Leader == "" || m.Status.Leader == "0":
		return lab.HealthNoLeader
	}
	return lab.HealthHealthy
}

// Partition is a cut the UI made between two groups of nodes.
type Partition struct {
	Side, From []string
}

// State is the observed cluster.
type State struct {
	Cluster string
	Members []Member
	// Messages are recent raft messages, oldest first, heartbeats
	// excluded (they are counted in Heartbeats).
	Messages []Message
	// Heartbeats counts recent heartbeats per leader→follower pair.
	Heartbeats []Heartbeat
	// Notes are the notable events, oldest first.
	Notes []Note
	// Ticks is the lab's raft clock: how many ticks the fastest member has
	// counted since observing began.
	Ticks float64
	// Partitions are the cuts made from this UI, until healed.
	Partitions []Partition
	// Lost counts events the Observer reported lost.
	Lost uint64
}

// New returns the state of a cluster whose members are listed in info.
func New(cluster string, members []lab.MemberInfo) *State {
	s := &State{Cluster: cluster}
	for _, m := range members {
		s.Members = append(s.Members, Member{Name: m.Name, ID: m.ID})
	}
	return s
}

// Member returns the named member, or nil.
func (s *State) Member(name string) *Member {
	for i := range s.Members {
		if s.Members[i].Name == name {
			return &s.Members[i]
		}
	}
	return nil
}

// Index returns the position of the named member, or -1.
func (s *State) Index(name string) int {
	for i := range s.Members {
		if s.Members[i].Name == name {
			return i
		}
	}
	return -1
}

// Leader returns the member that reports itself leader in the highest
// term, or nil. An isolated old leader may still believe it leads; raft
// allows one leader per term, so the newest term's is the real one.
func (s *State) Leader() *Member {
	var best *Member
	for i := range s.Members {
		m := &s.Members[i]
		if m.Running() && m.Status.State == "StateLeader" && (best == nil || m.Status.Term > best.Status.Term) {
			best = m
		}
	}
	return best
}

// Term returns the highest term any answering member reports.
func (s *State) Term() uint64 {
	var t uint64
	for _, m := range s.Members {
		if m.Reachable {
			t = max(t, m.Status.Term)
		}
	}
	return t
}

// Clock describes the raft clock as the members report it.
type Clock struct {
	// TickInterval is the leader's tick interval (or any answering
	// member's when there is no leader); zero when nobody answers.
	TickInterval time.Duration
	// Paused is set when any answering member's clock is paused; Mixed
	// when some are and some are not.
	Paused, Mixed bool
}

// Clock returns the raft clock's state.
func (s *State) Clock() Clock {
	var c Clock
	var running, paused int
	pick := s.Leader()
	for i := range s.Members {
		m := &s.Members[i]
		if !m.Reachable {
			continue
		}
		if pick == nil {
			pick = m
		}
		if m.Status.Clock.Paused {
			paused++
		} else {
			running++
		}
	}
	if pick != nil {
		c.TickInterval = time.Duration(pick.Status.Clock.TickIntervalMS * float64(time.Millisecond))
	}
	c.Paused = paused > 0
	c.Mixed = paused > 0 && running > 0
	return c
}

// Quorum returns how many members make a majority.
func (s *State) Quorum() int { return len(s.Members)/2 + 1 }

// MaxLastIndex returns the highest log index any member holds.
func (s *State) MaxLastIndex() uint64 {
	var hi uint64
	for _, m := range s.Members {
		if m.HasStatus {
			hi = max(hi, m.Status.LastIndex)
		}
	}
	return hi
}

// SetComponents records what the runtime reports about each member's
// component.
func (s *State) SetComponents(infos []runtime.ComponentInfo) {
	for _, ci := range infos {
		if ci.Ref.Component != runtime.ComponentEtcd {
			continue
		}
		if m := s.Member(ci.Ref.Node); m != nil {
			m.Runtime = ci.State
		}
	}
}

// Apply folds one observation into the state.
func (s *State) Apply(o lab.Observation) {
	switch o := o.(type) {
	case *lab.StatusObservation:
		s.applyStatus(o)
	case *lab.UnreachableObservation:
		if m := s.Member(o.Member); m != nil {
			m.Reachable = false
			m.Err = o.Err.Error()
		}
	case *lab.EventObservation:
		s.applyEvent(o.Member, o.Event)
	case *lab.GapObservation:
		s.Lost += o.Lost
	}
}

func (s *State) applyStatus(o *lab.StatusObservation) {
	m := s.Member(o.Member)
	if m == nil {
		return
	}
	st := o.Status
	ticks := st.Clock.Ticks
	// A member counts ticks from its start: a lower count than last time
	// is a new process, whose count joins the lab's clock where it is.
	if !m.seenTicks || ticks < m.lastTicks {
		m.tickBase = s.Ticks - float64(ticks)
		m.seenTicks = true
	}
	m.lastTicks = ticks
	s.Ticks = max(s.Ticks, m.tickBase+float64(ticks))
	m.Status, m.HasStatus, m.Reachable, m.Err = st, true, true, ""
	switch st.State {
	case "paused":
		m.Runtime = runtime.StatePaused
	case "stopped":
	default:
		m.Runtime = runtime.StateRunning
	}
	s.expire()
}

// expire drops what has been on screen long enough.
func (s *State) expire() {
	keep := s.Messages[:0]
	for _, msg := range s.Messages {
		if s.Ticks-msg.Tick <= MessageTicks {
			keep = append(keep, msg)
		}
	}
	clear(s.Messages[len(keep):])
	s.Messages = keep
	hb := s.Heartbeats[:0]
	for _, h := range s.Heartbeats {
		h.trim(s.Ticks)
		if s.Ticks-h.LastTick <= HeartbeatTicks {
			hb = append(hb, h)
		}
	}
	s.Heartbeats = hb
}

// Age returns how many ticks ago something stamped at tick happened.
func (s *State) Age(tick float64) float64 { return s.Ticks - tick }

// Clone returns a copy of the state that Apply on either leaves the other
// alone: the checkpoints a recording's timeline seeks from.
func (s *State) Clone() *State {
	c := *s
	c.Members = slices.Clone(s.Members)
	c.Messages = slices.Clone(s.Messages)
	c.Heartbeats = slices.Clone(s.Heartbeats)
	c.Notes = slices.Clone(s.Notes)
	c.Partitions = make([]Partition, len(s.Partitions))
	for i, p := range s.Partitions {
		c.Partitions[i] = Partition{Side: slices.Clone(p.Side), From: slices.Clone(p.From)}
	}
	if s.Partitions == nil {
		c.Partitions = nil
	}
	return &c
}
