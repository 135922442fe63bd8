package lessons

import "strings"

// Observation is one fact about the cluster, fed to an Evaluator. It is one
// of MemberObserved, ClockObserved, MessageObserved, NodeObserved,
// PodObserved, KeyObserved and CommandObserved.
//
// The integrator turns what cluster/lab's Observer reports into these:
//
//   - a StatusObservation gives a MemberObserved (State from
//     MemberStateOf(Status.State), Term, Leader as the leader's member
//     name, not its hex ID) and a ClockObserved;
//   - an UnreachableObservation gives a MemberObserved with MemberUnreachable;
//   - an EventObservation of kind state, leader or election gives a
//     MemberObserved (its State, Term, Leader), of kind clock a
//     ClockObserved, and of kind send a MessageObserved (recv is the same
//     message seen from the other end, and must not be fed too);
//   - the Kubernetes watches give NodeObserved and PodObserved, starting
//     with what the initial list returns;
//   - an etcd watch of the keys a check needs (Needs.Keys) gives
//     KeyObserved, starting with their current values;
//   - every command the student or the engine runs gives a
//     CommandObserved when it ends; an action done with a key in the TUI is
//     fed as the command it stands for (k as klab chaos kill leader, w as
//     klab etcdctl put <key> <value>).
//
// State observations (members, clocks, nodes, pods, keys) replace what was
// known before; messages and commands are events, counted from the moment a
// step begins.
type Observation interface{ observation() }

// MemberState is an etcd member's raft role, or why it has none.
type MemberState string

// Member states.
const (
	MemberLeader       MemberState = "leader"
	MemberFollower     MemberState = "follower"
	MemberCandidate    MemberState = "candidate"
	MemberPreCandidate MemberState = "pre-candidate"
	// MemberPaused is a member frozen by klab chaos pause.
	MemberPaused MemberState = "paused"
	// MemberStopped is a member that says it is not running.
	MemberStopped MemberState = "stopped"
	// MemberUnreachable is a member that does not answer at all.
	MemberUnreachable MemberState = "unreachable"
)

// MemberStateOf turns the state an etcd member reports (raft's
// "StateLeader", "StatePreCandidate", ..., or "stopped", "paused") into a
// MemberState; ok is false for anything else.
func MemberStateOf(s string) (state MemberState, ok bool) {
	switch strings.ToLower(strings.TrimPrefix(s, "State")) {
	case "leader":
		return MemberLeader, true
	case "follower":
		return MemberFollower, true
	case "candidate":
		return MemberCandidate, true
	case "precandidate", "pre-candidate":
		return MemberPreCandidate, true
	case "paused":
		return MemberPaused, true
	case "stopped", "killed":
		return MemberStopped, true
	case "unreachable":
		return MemberUnreachable, true
	}
	return "", false
}

// running reports whether the member takes part in raft: it has a role.
func (s MemberState) running() bool {
	switch s {
	case MemberLeader, MemberFollower, MemberCandidate, MemberPreCandidate:
		return true
	}
	return false
}

// down reports whether the member is gone: stopped, killed or cut off from
// whoever observes it.
func (s MemberState) down() bool { return s == MemberStopped || s == MemberUnreachable }

// MemberObserved is what one etcd member says of itself.
type MemberObserved struct {
	// Member is the member's name, which is its node's (master-1).
	Member string
	State  MemberState
	Term   uint64
	// Leader is the name of the member it takes for leader, "" for none.
	Leader string
}

// ClockObserved is one member's raft clock.
type ClockObserved struct {
	Member string
	// Slowdown is how many times slower than real time the clock runs:
	// its tick interval divided by etcd's 100 ms (lab.BaseTick), rounded;
	// 1 is real time.
	Slowdown int
	Paused   bool
}

// MessageObserved is a raft message a member sent to another, or several
// alike (heartbeats a stream folded into one report).
type MessageObserved struct {
	From, To string
	// Type is the raftpb name: MsgVote, MsgApp, ...
	Type string
	Term uint64
	// Count is how many were sent; 0 means one.
	Count int
}

// NodeObserved is a Kubernetes node's readiness.
type NodeObserved struct {
	Node string
	// Ready is the node's Ready condition being True.
	Ready bool
	// Deleted says the node object is gone.
	Deleted bool
}

// PodObserved is a pod as the API server last reported it.
type PodObserved struct {
	Namespace, Name string
	Labels          map[string]string
	// Node is spec.nodeName, "" while the pod is not scheduled.
	Node string
	// Phase is status.phase: Pending, Running, Succeeded, Failed, Unknown.
	Phase string
	// Terminating says the pod has a deletion timestamp.
	Terminating bool
	// Deleted says the pod object is gone.
	Deleted bool
}

// KeyObserved is the value of an etcd key a check watches.
type KeyObserved struct {
	Key, Value string
	// Deleted says the key does not exist (it was deleted, or never was).
	Deleted bool
}

// CommandObserved is a command that ended.
type CommandObserved struct {
	// Args are the command's words; a leading "klab" is optional.
	Args []string
	// Err is nil when the command succeeded.
	Err error
	// Output is what the command printed, standard error included: an
	// etcdctl failure is explained there, not in Err.
	Output string
}

func (MemberObserved) observation()  {}
func (ClockObserved) observation()   {}
func (MessageObserved) observation() {}
func (NodeObserved) observation()    {}
func (PodObserved) observation()     {}
func (KeyObserved) observation()     {}
func (CommandObserved) observation() {}
