package lessons

import (
	"go.etcd.io/raft/v3/raftpb"
	"go.yaml.in/yaml/v3"

	"github.com/klab-dev/klab/assets/i18n"
)

// maxSlowdown mirrors klab clock speed's limit: 1/100 of real time.
const maxSlowdown = 100

// RaftClockCheck passes when every running member's raft clock is as
// asked: paused or not, and ticking at least MinSlowdown and at most
// MaxSlowdown times slower than etcd's 100 ms. Zero leaves a bound out.
//
//	raft-clock: {minSlowdown: 10}
//	raft-clock: {paused: false, maxSlowdown: 1}
type RaftClockCheck struct {
	// Paused, when set, is whether the clocks must be paused.
	Paused                   *bool
	MinSlowdown, MaxSlowdown int
}

// RaftMessageCheck passes when members have sent at least Count raft
// messages of a type since the step began.
//
//	raft-message: {type: MsgVote}
type RaftMessageCheck struct {
	// Type is the raftpb name of the message: MsgVote, MsgPreVote, ...
	Type  string
	Count int
}

func (RaftClockCheck) Kind() CheckKind   { return KindRaftClock }
func (RaftMessageCheck) Kind() CheckKind { return KindRaftMessage }

func (RaftClockCheck) Needs() Needs   { return Needs{Members: true, Clocks: true} }
func (RaftMessageCheck) Needs() Needs { return Needs{Messages: true} }

func (c RaftClockCheck) Describe() []i18n.Message {
	var out []i18n.Message
	if c.Paused != nil {
		if *c.Paused {
			out = append(out, i18n.M("lessons.want.clock-paused"))
		} else {
			out = append(out, i18n.M("lessons.want.clock-running"))
		}
	}
	if c.MinSlowdown > 0 {
		out = append(out, i18n.M("lessons.want.clock-min", c.MinSlowdown))
	}
	if c.MaxSlowdown > 0 {
		out = append(out, i18n.M("lessons.want.clock-max", c.MaxSlowdown))
	}
	return out
}

func (c RaftMessageCheck) Describe() []i18n.Message {
	return []i18n.Message{i18n.M("lessons.want.message", c.Count, c.Type)}
}

// fits reports whether one clock is as the check asks.
func (c RaftClockCheck) fits(clock ClockObserved) bool {
	return (c.Paused == nil || *c.Paused == clock.Paused) &&
		(c.MinSlowdown == 0 || clock.Slowdown >= c.MinSlowdown) &&
		(c.MaxSlowdown == 0 || clock.Slowdown <= c.MaxSlowdown)
}

// clockMessage describes one member's clock.
func clockMessage(clock ClockObserved) i18n.Message {
	if clock.Paused {
		return i18n.M("lessons.check.clock-paused", clock.Member, clock.Slowdown)
	}
	return i18n.M("lessons.check.clock-running", clock.Member, clock.Slowdown)
}

func (c RaftClockCheck) evaluate(_, now *world) Verdict {
	// Only running members count: a dead member's last clock is stale,
	// and a stopped member's clock does not matter to an election.
	var seen []ClockObserved
	for _, name := range now.memberNames() {
		if !now.members[name].State.running() {
			continue
		}
		clock, ok := now.clocks[name]
		if !ok {
			return wait(i18n.M("lessons.check.clock-unseen", name))
		}
		if !c.fits(clock) {
			return wait(clockMessage(clock))
		}
		seen = append(seen, clock)
	}
	if len(seen) == 0 {
		return wait(i18n.M("lessons.check.no-members"))
	}
	reasons := make([]i18n.Message, len(seen))
	for i, clock := range seen {
		reasons[i] = clockMessage(clock)
	}
	return pass(reasons...)
}

func (c RaftMessageCheck) evaluate(start, now *world) Verdict {
	n := now.sent[c.Type] - start.sent[c.Type]
	msg := i18n.M("lessons.check.messages", n, c.Type)
	if n >= c.Count {
		return pass(msg)
	}
	return wait(msg)
}

func (d *decoder) raftClock(n *yaml.Node, path string) Check {
	f := d.params(n, path, "paused", "minSlowdown", "maxSlowdown")
	if f == nil {
		return nil
	}
	c := RaftClockCheck{}
	if v, set := f.boolean("paused"); set {
		c.Paused = &v
	}
	c.MinSlowdown = f.integer("minSlowdown", false, 0, 1, maxSlowdown)
	c.MaxSlowdown = f.integer("maxSlowdown", false, 0, 1, maxSlowdown)
	switch {
	case f.get("paused") == nil && f.get("minSlowdown") == nil && f.get("maxSlowdown") == nil:
		d.fail(f.node, path, i18n.M("lessons.err.need-one-of", "paused, minSlowdown, maxSlowdown"))
	case c.MinSlowdown > 0 && c.MaxSlowdown > 0 && c.MinSlowdown > c.MaxSlowdown:
		d.fail(f.get("minSlowdown"), field(path, "minSlowdown"), i18n.M("lessons.err.min-max", "minSlowdown", "maxSlowdown"))
	}
	return c
}

// localMessages are raft message types that never leave a member: the
// node loop steps them into itself. A check waiting for one would never
// pass.
var localMessages = []string{
	"MsgHup", "MsgBeat", "MsgUnreachable", "MsgSnapStatus", "MsgCheckQuorum",
	"MsgStorageAppend", "MsgStorageAppendResp", "MsgStorageApply", "MsgStorageApplyResp",
}

func (d *decoder) raftMessage(n *yaml.Node, path string) Check {
	f := d.params(n, path, "type", "count")
	if f == nil {
		return nil
	}
	c := RaftMessageCheck{}
	typ, tn := f.str("type", true)
	if _, known := raftpb.MessageType_value[typ]; tn != nil && typ != "" && (!known || contains(localMessages, typ)) {
		d.fail(tn, field(path, "type"), i18n.M("lessons.err.bad-message", typ))
	}
	c.Type = typ
	c.Count = f.integer("count", false, 1, 1, 1_000_000)
	return c
}
