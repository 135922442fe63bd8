package scheduler

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/cluster/lab"
	sched "github.com/klab-dev/klab/cluster/scheduler"
)

// tapeItem is one item of the view's feed as the recording keeps it: a
// scheduler's stream opening ("state":"") or failing ("state" says why),
// or one of its events.
type tapeItem struct {
	Node  string       `json:"n,omitempty"`
	State *string      `json:"state,omitempty"`
	Event *sched.Event `json:"e,omitempty"`
}

// Tape records a batch of the view's feed.
func (v *View) Tape(msg tea.Msg) []byte {
	b, ok := v.feed.Take(msg)
	if !ok {
		return nil
	}
	return tapeOf(b.Items)
}

func tapeOf(items []any) []byte {
	out := make([]tapeItem, 0, len(items))
	for _, it := range items {
		switch it := it.(type) {
		case stateItem:
			s := ""
			if it.Err != nil {
				s = it.Err.Error()
			}
			out = append(out, tapeItem{Node: it.Node, State: &s})
		case eventItem:
			e := it.Event
			out = append(out, tapeItem{Node: it.Node, Event: &e})
		}
	}
	if len(out) == 0 {
		return nil
	}
	b, _ := json.Marshal(out)
	return b
}

// Replay forgets the decisions and readies the view to draw the
// kube-schedulers of the cluster info describes from tapes.
func (v *View) Replay(info *lab.Info) {
	v.feed = nil
	v.started = true
	v.sources = schedulers(info)
	v.holder, v.holderAt = "", time.Time{}
	v.pods = pods{}
}

// Play folds a tape into the view.
func (v *View) Play(tape []byte) error {
	var items []tapeItem
	if err := json.Unmarshal(tape, &items); err != nil {
		return err
	}
	for i, it := range items {
		switch {
		case it.State != nil:
			var err error
			if *it.State != "" {
				err = errors.New(*it.State)
			}
			v.apply(stateItem{Node: it.Node, Err: err})
		case it.Event != nil:
			v.apply(eventItem{Node: it.Node, Event: *it.Event})
		default:
			return fmt.Errorf("item %d is neither a state nor an event", i+1)
		}
	}
	return nil
}

// Keyframe returns the schedulers' states, the leader and the decisions
// (oldest first, each with its binding) as one tape.
func (v *View) Keyframe() []byte {
	var items []any
	for _, s := range v.sources {
		var err error
		if !s.Connected && s.Err != "" {
			err = errors.New(s.Err)
		}
		if s.Connected || err != nil {
			items = append(items, stateItem{Node: s.Node, Err: err})
		}
	}
	if v.holder != "" {
		items = append(items, eventItem{Event: sched.Event{Kind: sched.EventLeader, Holder: v.holder, Time: v.holderAt}})
	}
	for _, s := range v.sources {
		if s.Leading {
			items = append(items, eventItem{Node: s.Node, Event: sched.Event{Kind: sched.EventLeader, IsLeader: true, Holder: v.holder, Time: v.holderAt}})
		}
	}
	for i := len(v.pods.list) - 1; i >= 0; i-- {
		e := v.pods.list[i]
		d := e.Decision
		items = append(items, eventItem{Event: sched.Event{Kind: sched.EventDecision, Decision: &d}})
		if e.Bound || e.BindError != d.BindError {
			items = append(items, eventItem{Event: sched.Event{Kind: sched.EventBind, Pod: e.Key, Node: d.Node, Error: e.BindError}})
		}
	}
	return tapeOf(items)
}
