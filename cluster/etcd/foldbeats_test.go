package etcd

import (
	"fmt"
	"reflect"
	"testing"
)

func TestFoldBeats(t *testing.T) {
	beat := func(seq uint64, kind, typ, from, to string, skipped uint64) Event {
		return Event{Seq: seq, Kind: kind, Skipped: skipped, Msg: &MessageInfo{Type: typ, From: from, To: to}}
	}
	app := func(seq uint64) Event {
		return Event{Seq: seq, Kind: EventSend, Msg: &MessageInfo{Type: "MsgApp", From: "1", To: "2", Entries: 1}}
	}
	batch := []any{
		beat(1, EventSend, "MsgHeartbeat", "1", "2", 0),
		beat(2, EventSend, "MsgHeartbeat", "1", "3", 0),
		app(3),
		// 4 left out by beats=sent: a heartbeat this member stepped.
		beat(5, EventSend, "MsgHeartbeat", "1", "2", 1),
		beat(6, EventRecv, "MsgHeartbeatResp", "2", "1", 0),
		"not an event",
		beat(7, EventSend, "MsgHeartbeat", "1", "2", 0),
		beat(8, EventSend, "MsgHeartbeat", "1", "3", 0),
		app(9),
	}
	want := []any{
		app(3), // 1 and 2 folded into 7 and 8
		beat(6, EventRecv, "MsgHeartbeatResp", "2", "1", 2), // 4 and 5 left out
		"not an event",
		beat(7, EventSend, "MsgHeartbeat", "1", "2", 0),
		beat(8, EventSend, "MsgHeartbeat", "1", "3", 0),
		app(9),
	}
	want[0] = withSkipped(want[0].(Event), 2)
	want[3] = withBeats(want[3].(Event), 3)
	want[4] = withBeats(want[4].(Event), 2)
	got := foldBeats(batch)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("folded:\n%v\nwant\n%v", describe(got), describe(want))
	}
	// Every sequence number is written or counted as left out.
	next := uint64(1)
	for _, v := range got {
		if e, ok := v.(Event); ok {
			if e.Seq != next+e.Skipped {
				t.Errorf("event %d follows %d with %d skipped", e.Seq, next-1, e.Skipped)
			}
			next = e.Seq + 1
		}
	}

	// A batch without two heartbeats of one pair is written as it is.
	plain := []any{app(1), beat(2, EventSend, "MsgHeartbeat", "1", "2", 0)}
	if got := foldBeats(append([]any(nil), plain...)); len(got) != 2 || got[1].(Event).Beats != 0 || got[0].(Event).Skipped != 0 {
		t.Errorf("a lone heartbeat folded: %v", describe(got))
	}
}

func withSkipped(e Event, n uint64) Event { e.Skipped = n; return e }
func withBeats(e Event, n int) Event      { e.Beats = n; return e }

func describe(vs []any) []string {
	var out []string
	for _, v := range vs {
		if e, ok := v.(Event); ok {
			out = append(out, fmt.Sprintf("%s %s seq %d skipped %d beats %d", e.Kind, e.Msg.Type, e.Seq, e.Skipped, e.Beats))
		} else {
			out = append(out, fmt.Sprint(v))
		}
	}
	return out
}
