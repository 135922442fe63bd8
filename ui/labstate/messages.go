package labstate

import (
	"time"

	"github.com/klab-dev/klab/cluster/etcd"
)

// Message is one raft message between two members, assembled from the
// sender's "send" event and the receiver's "recv" event, whichever the
// Observer delivered first.
type Message struct {
	Type     string
	From, To string // member names
	Term     uint64
	LogTerm  uint64
	Index    uint64
	Commit   uint64
	Entries  int
	Reject   bool
	// Tick is the lab tick at which the message was first seen, and Time
	// the member's clock then.
	Tick float64
	Time time.Time
	// Sent and Received say which ends reported the message.
	Sent, Received bool
	// Lost is etcd.EventDrop when the network (a partition) lost the
	// message, etcd.EventUnreachable when the peer did not answer.
	Lost string
}

// msgKey identifies a message across its two ends' events.
type msgKey struct {
	typ, from, to           string
	term, logTerm, index, c uint64
	entries                 int
	reject                  bool
}

func keyOf(mi *etcd.MessageInfo) msgKey {
	return msgKey{mi.Type, mi.FromName, mi.ToName, mi.Term, mi.LogTerm, mi.Index, mi.Commit, mi.Entries, mi.Reject}
}

func (m *Message) key() msgKey {
	return msgKey{m.Type, m.From, m.To, m.Term, m.LogTerm, m.Index, m.Commit, m.Entries, m.Reject}
}

// Heartbeat counts the recent heartbeats between a leader and one
// follower.
type Heartbeat struct {
	Leader, Follower string
	Term             uint64
	// LastTick is when the latest one was seen.
	LastTick float64
	// LostKind says how the latest lost one was lost (etcd.EventDrop or
	// etcd.EventUnreachable).
	LostKind string
	beats    []float64
	resps    []float64
	drops    []float64
}

// Beats returns how many heartbeats the leader sent in the window.
func (h *Heartbeat) Beats() int { return len(h.beats) }

// Responses returns how many answers the follower sent in the window.
func (h *Heartbeat) Responses() int { return len(h.resps) }

// Drops returns how many heartbeats or answers were lost in the window.
func (h *Heartbeat) Drops() int { return len(h.drops) }

func (h *Heartbeat) trim(now float64) {
	cut := func(ts []float64) []float64 {
		i := 0
		for i < len(ts) && now-ts[i] > HeartbeatTicks {
			i++
		}
		return ts[i:]
	}
	h.beats, h.resps, h.drops = cut(h.beats), cut(h.resps), cut(h.drops)
}

// NoteKind says what a Note records.
type NoteKind string

// Notable event kinds.
const (
	NoteState     NoteKind = "state"     // a member's role changed
	NoteLeader    NoteKind = "leader"    // a member saw a new leader, or lost it
	NoteElection  NoteKind = "election"  // a member started an election
	NoteLifecycle NoteKind = "lifecycle" // a member started, stopped, paused, resumed
	NoteSnapshot  NoteKind = "snapshot"
)

// Note is a notable event, kept as data so that the view renders it in
// the language of the moment.
type Note struct {
	Kind   NoteKind
	Member string
	Time   time.Time
	Tick   float64
	// Role is the member's role after the event; Term its term.
	Role string
	Term uint64
	// Leader names the new leader ("" for none).
	Leader string
	// Detail is the member's own words (lifecycle: "started", ...).
	Detail string
}

func (s *State) applyEvent(member string, e etcd.Event) {
	switch e.Kind {
	case etcd.EventSend, etcd.EventRecv, etcd.EventDrop, etcd.EventUnreachable:
		if e.Msg != nil {
			s.applyMessage(e)
		}
		// A follower stepping its leader's heartbeat or append resets
		// its election timer, as raft's stepFollower does; its answer
		// says it did (the Observer does not stream the heartbeats a
		// member steps). The Observer reads a steady follower's status
		// only about once a second, so the timer is reset here, between
		// two reads.
		if e.HeardLeader() {
			if m := s.Member(member); m != nil && m.Status.State == "StateFollower" && e.Msg.Term >= m.Status.Term {
				m.Status.ElectionElapsed = 0
			}
		}
	case etcd.EventState:
		// Membership changes replayed at start are "state" events with a
		// detail and no role change worth a line; becoming a candidate is
		// told by the election event that follows.
		role := RoleOf(e.State)
		if e.Detail == "" && role != RoleCandidate && role != RolePreCandidate {
			s.note(Note{Kind: NoteState, Member: member, Time: e.Time, Role: role, Term: e.Term})
		}
	case etcd.EventLeader:
		// A member that became leader already said so in its state event.
		if lead := s.nameOfID(e.Leader); lead == member {
			return
		}
		s.note(Note{Kind: NoteLeader, Member: member, Time: e.Time, Term: e.Term, Leader: s.nameOfID(e.Leader)})
	case etcd.EventElection:
		s.note(Note{Kind: NoteElection, Member: member, Time: e.Time, Role: RoleOf(e.State), Term: e.Term})
	case etcd.EventLifecycle:
		s.note(Note{Kind: NoteLifecycle, Member: member, Time: e.Time, Detail: e.Detail})
	case etcd.EventSnapshot:
		s.note(Note{Kind: NoteSnapshot, Member: member, Time: e.Time, Detail: e.Detail})
	}
}

func (s *State) note(n Note) {
	n.Tick = s.Ticks
	s.Notes = append(s.Notes, n)
	if len(s.Notes) > maxNotes {
		s.Notes = append(s.Notes[:0], s.Notes[len(s.Notes)-maxNotes:]...)
	}
}

// nameOfID maps a hex member ID to the member's name; "" for none ("0").
func (s *State) nameOfID(id string) string {
	if id == "" || id == "0" {
		return ""
	}
	for _, m := range s.Members {
		if m.ID == id || m.Status.ID == id {
			return m.Name
		}
	}
	return id
}

func (s *State) applyMessage(e etcd.Event) {
	mi := e.Msg
	// A heartbeat round is counted rather than drawn one by one.
	if etcd.IsHeartbeat(mi.Type) {
		s.applyHeartbeat(e)
		return
	}
	k := keyOf(mi)
	// The other end of a message is among the latest few: look back a
	// little for one that lacks this end.
	for i := len(s.Messages) - 1; i >= 0 && i >= len(s.Messages)-64; i-- {
		m := &s.Messages[i]
		if m.key() != k {
			continue
		}
		switch {
		case e.Kind == etcd.EventRecv && !m.Received:
			m.Received = true
			return
		case e.Kind == etcd.EventSend && !m.Sent:
			m.Sent = true
			return
		case (e.Kind == etcd.EventDrop || e.Kind == etcd.EventUnreachable) && m.Lost == "" && !m.Received:
			m.Lost = e.Kind
			return
		}
	}
	m := Message{
		Type: mi.Type, From: mi.FromName, To: mi.ToName, Term: mi.Term, LogTerm: mi.LogTerm,
		Index: mi.Index, Commit: mi.Commit, Entries: mi.Entries, Reject: mi.Reject,
		Tick: s.Ticks, Time: e.Time,
	}
	switch e.Kind {
	case etcd.EventSend:
		m.Sent = true
	case etcd.EventRecv:
		m.Received = true
	default:
		m.Sent, m.Lost = true, e.Kind
	}
	s.Messages = append(s.Messages, m)
	if len(s.Messages) > maxMessages {
		s.Messages = append(s.Messages[:0], s.Messages[len(s.Messages)-maxMessages:]...)
	}
}

func (s *State) applyHeartbeat(e etcd.Event) {
	mi := e.Msg
	leader, follower := mi.FromName, mi.ToName
	if mi.Type == "MsgHeartbeatResp" {
		leader, follower = follower, leader
	}
	var h *Heartbeat
	for i := range s.Heartbeats {
		if s.Heartbeats[i].Leader == leader && s.Heartbeats[i].Follower == follower {
			h = &s.Heartbeats[i]
			break
		}
	}
	if h == nil {
		s.Heartbeats = append(s.Heartbeats, Heartbeat{Leader: leader, Follower: follower})
		h = &s.Heartbeats[len(s.Heartbeats)-1]
	}
	h.Term = max(h.Term, mi.Term)
	h.LastTick = s.Ticks
	// Each heartbeat is reported by both ends; only the sender's report
	// counts, so that a message is counted once. A report may stand for
	// several (Event.Beats), sent since the stream's last flush.
	switch {
	case e.Kind == etcd.EventDrop || e.Kind == etcd.EventUnreachable:
		h.drops = append(h.drops, s.Ticks)
		h.LostKind = e.Kind
	case e.Kind != etcd.EventSend:
	case mi.Type == "MsgHeartbeat":
		h.beats = appendN(h.beats, s.Ticks, e.Count())
	default:
		h.resps = appendN(h.resps, s.Ticks, e.Count())
	}
}

// appendN appends n copies of t.
func appendN(ts []float64, t float64, n int) []float64 {
	for range n {
		ts = append(ts, t)
	}
	return ts
}

// SawDrops reports whether messages were lost to the network recently:
// a partition is in place, whoever made it.
func (s *State) SawDrops() bool {
	for _, m := range s.Messages {
		if m.Lost == etcd.EventDrop {
			return true
		}
	}
	for i := range s.Heartbeats {
		if s.Heartbeats[i].Drops() > 0 {
			return true
		}
	}
	return false
}
