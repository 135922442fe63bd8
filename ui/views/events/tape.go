package events

import (
	"encoding/json"
	"errors"
	"fmt"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/cluster/lab"
)

// tapeItem is one item of the view's feed as the recording keeps it; K
// says which: "list" (the Events a list found), "event" (one the watch
// reported), "watch" (the watch runs, or Err says why not), "req" (one
// request an API server served), "server" (an API server's log is open,
// or Err says why not).
type tapeItem struct {
	K      string      `json:"k"`
	Rows   []eventRow  `json:"rows,omitempty"`
	Event  *eventRow   `json:"ev,omitempty"`
	Req    *requestRow `json:"req,omitempty"`
	Server string      `json:"srv,omitempty"`
	Err    string      `json:"err,omitempty"`
}

// Tape records a batch of the view's feed.
func (v *View) Tape(msg tea.Msg) []byte {
	b, ok := v.feed.Take(msg)
	if !ok {
		return nil
	}
	return tapeOf(b.Items)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func errOf(s string) error {
	if s == "" {
		return nil
	}
	return errors.New(s)
}

func tapeOf(items []any) []byte {
	out := make([]tapeItem, 0, len(items))
	for _, it := range items {
		switch it := it.(type) {
		case eventsListed:
			out = append(out, tapeItem{K: "list", Rows: it.Rows})
		case eventChanged:
			r := it.Row
			out = append(out, tapeItem{K: "event", Event: &r})
		case eventsState:
			out = append(out, tapeItem{K: "watch", Err: errText(it.Err)})
		case requestItem:
			r := it.Row
			out = append(out, tapeItem{K: "req", Req: &r})
		case requestState:
			out = append(out, tapeItem{K: "server", Server: it.Server, Err: errText(it.Err)})
		}
	}
	if len(out) == 0 {
		return nil
	}
	b, _ := json.Marshal(out)
	return b
}

// Replay forgets the Events and requests and readies the view to draw
// the cluster info describes from tapes.
func (v *View) Replay(info *lab.Info) {
	if v.stopRequests != nil {
		v.stopRequests()
	}
	*v = View{c: v.c, width: v.width, height: v.height, loc: v.loc, filter: v.filter}
	v.started = true
	v.info, v.srvs = info, apiServers(info)
	for _, s := range v.srvs {
		v.servers = append(v.servers, serverState{Node: s.Node})
	}
}

// Play folds a tape into the view.
func (v *View) Play(tape []byte) error {
	var items []tapeItem
	if err := json.Unmarshal(tape, &items); err != nil {
		return err
	}
	for i, it := range items {
		switch {
		case it.K == "list":
			v.apply(eventsListed{Rows: it.Rows})
		case it.K == "event" && it.Event != nil:
			v.apply(eventChanged{Row: *it.Event})
		case it.K == "watch":
			v.apply(eventsState{Err: errOf(it.Err)})
		case it.K == "req" && it.Req != nil:
			v.apply(requestItem{Row: *it.Req})
		case it.K == "server":
			v.apply(requestState{Server: it.Server, Err: errOf(it.Err)})
		default:
			return fmt.Errorf("item %d: unknown kind %q", i+1, it.K)
		}
	}
	return nil
}

// Keyframe returns the Events, the requests and the states of the watch
// and of the request logs as one tape.
func (v *View) Keyframe() []byte {
	var items []any
	if v.listed {
		items = append(items, eventsListed{Rows: v.events.rows})
	}
	if v.watching || v.eventsErr != "" {
		items = append(items, eventsState{Err: errOf(v.eventsErr)})
	}
	for _, r := range v.requests.rows {
		items = append(items, requestItem{Row: r})
	}
	for _, s := range v.servers {
		if s.Connected || s.Err != "" {
			items = append(items, requestState{Server: s.Node, Err: errOf(s.Err)})
		}
	}
	return tapeOf(items)
}
