package etcd

import (
	"strconv"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/klab-dev/klab/cluster/internal/eventstream"
)

// Event kinds on the raft event stream (/debug/klab/events).
const (
	EventSend = "send" // a raft message handed to the transport
	EventRecv = "recv" // a raft message stepped into this member
	EventDrop = "drop" // a message the network (fault layer) lost
	// EventUnreachable is a message the transport could not deliver because
	// the peer did not answer (it is stopped, or its network is gone).
	EventUnreachable = "unreachable"
	EventState       = "state"     // this member's raft role changed
	EventLeader      = "leader"    // this member saw a new leader (or none)
	EventElection    = "election"  // this member started an election (pre-vote or vote)
	EventSnapshot    = "snapshot"  // a snapshot was created, sent or installed
	EventClock       = "clock"     // the raft clock was paused, resumed, stepped or re-timed
	EventLifecycle   = "lifecycle" // the member started, stopped, paused or resumed
	EventAlarm       = "alarm"     // an alarm (NOSPACE) was raised or disarmed in the cluster
)

// eventRingSize is how many events a member keeps for readers that
// connect late: a few seconds of a busy cluster's traffic.
const eventRingSize = 4096

// newEventHub returns the hub of a member's events: numbered from 1, and
// timed as they are published.
func newEventHub() *eventstream.Hub[Event] {
	return eventstream.NewHub(eventRingSize, func(e *Event, seq uint64, now time.Time) { e.Seq, e.Time = seq, now })
}

// Event is one thing that happened inside a member, as the UI draws it.
type Event struct {
	Seq    uint64    `json:"seq"`
	Time   time.Time `json:"time"`
	Member string    `json:"member"`
	Kind   string    `json:"kind"`
	// Msg is set for send, recv and drop.
	Msg *MessageInfo `json:"msg,omitempty"`
	// State, Term and Leader describe the member after a state, leader or
	// election event.
	State  string `json:"state,omitempty"`
	Term   uint64 `json:"term,omitempty"`
	Leader string `json:"leader,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Skipped is set on a stream read with ?series=true: how many events
	// just before this one the stream wrote as part of a series, so that
	// a reader tells them from events lost.
	Skipped uint64 `json:"skipped,omitempty"`
	// Beats is set on a heartbeat, or an answer to one, that stands for a
	// series (?series=true): how many of this kind between these two
	// members, itself included, a flush of the stream held. The stream
	// writes only the last of them.
	Beats int `json:"beats,omitempty"`
}

// Count is how many messages e stands for: its Beats, or one.
func (e Event) Count() int { return max(e.Beats, 1) }

// MessageInfo is the part of a raft message worth showing.
type MessageInfo struct {
	Type     string `json:"type"` // MsgApp, MsgVote, ... as raftpb names them
	From     string `json:"from"` // hex member IDs
	To       string `json:"to"`
	FromName string `json:"fromName,omitempty"`
	ToName   string `json:"toName,omitempty"`
	Term     uint64 `json:"term"`
	LogTerm  uint64 `json:"logTerm,omitempty"`
	Index    uint64 `json:"index,omitempty"`
	Commit   uint64 `json:"commit,omitempty"`
	Entries  int    `json:"entries,omitempty"`
	Reject   bool   `json:"reject,omitempty"`
}

func hexID(id uint64) string { return strconv.FormatUint(id, 16) }

// A steady cluster's traffic, as the event stream and its readers sort it.

// IsHeartbeat reports whether a message type is a leader's heartbeat or
// its answer.
func IsHeartbeat(typ string) bool { return typ == "MsgHeartbeat" || typ == "MsgHeartbeatResp" }

// passed reports whether e is a message sent or stepped (not lost).
func (e Event) passed() bool {
	return e.Msg != nil && (e.Kind == EventSend || e.Kind == EventRecv)
}

// Heartbeat reports whether e is a heartbeat or its answer, sent or
// stepped.
func (e Event) Heartbeat() bool { return e.passed() && IsHeartbeat(e.Msg.Type) }

// ReadIndex reports whether e is a read-index round's message, sent or
// stepped: it changes nothing in a member's log or status.
func (e Event) ReadIndex() bool {
	return e.passed() && (e.Msg.Type == "MsgReadIndex" || e.Msg.Type == "MsgReadIndexResp")
}

// Replication reports whether e is a proposal, an append or an append's
// accepting answer, sent or stepped: it moves the members' indexes.
func (e Event) Replication() bool {
	return e.passed() && !e.Msg.Reject &&
		(e.Msg.Type == "MsgApp" || e.Msg.Type == "MsgAppResp" || e.Msg.Type == "MsgProp")
}

// Routine reports whether e is a steady cluster's traffic: a heartbeat, a
// read-index round or replication, sent or stepped. Anything else (a vote,
// a role change, a rejection, a lost message, a clock change) is news.
func (e Event) Routine() bool { return e.Heartbeat() || e.ReadIndex() || e.Replication() }

// heartbeatSeries is the series of a heartbeat, or an answer, sent or
// stepped: the messages of this kind between these two members
// (eventstream's ?series=true).
func heartbeatSeries(e Event) (string, bool) {
	if !e.Heartbeat() {
		return "", false
	}
	return e.Kind + " " + e.Msg.Type + " " + e.Msg.From + " " + e.Msg.To, true
}

// HeardLeader reports whether e shows its member stepped a leader's
// heartbeat or append, which resets a follower's election timer (raft's
// stepFollower): it stepped one, or answered one (a follower answers only
// what it stepped).
func (e Event) HeardLeader() bool {
	if e.Msg == nil {
		return false
	}
	switch e.Kind {
	case EventSend:
		return e.Msg.Type == "MsgHeartbeatResp" || e.Msg.Type == "MsgAppResp"
	case EventRecv:
		return e.Msg.Type == "MsgHeartbeat" || e.Msg.Type == "MsgApp"
	}
	return false
}

func messageInfo(m *raftpb.Message, names func(uint64) string) *MessageInfo {
	return &MessageInfo{
		Type:     m.GetType().String(),
		From:     hexID(m.GetFrom()),
		To:       hexID(m.GetTo()),
		FromName: names(m.GetFrom()),
		ToName:   names(m.GetTo()),
		Term:     m.GetTerm(),
		LogTerm:  m.GetLogTerm(),
		Index:    m.GetIndex(),
		Commit:   m.GetCommit(),
		Entries:  len(m.GetEntries()),
		Reject:   m.GetReject(),
	}
}
