package kubestate

import (
	"encoding/json"
	"fmt"
	"slices"
)

// A tape is the compact record of a feed message (package record keeps
// them): a JSON array with one element per object that changed, holding
// its projection (the few fields the TUI draws, never the whole object)
// under the name of its kind, and "del" for a deletion:
//
//	[{"pod":{"ns":"default","name":"web-1","node":"worker-1","phase":"Running","ready":true}},
//	 {"node":{"name":"worker-2"},"del":true}]
type tapeChange struct {
	Node    *Node        `json:"node,omitempty"`
	Pod     *Pod         `json:"pod,omitempty"`
	Lease   *Lease       `json:"lease,omitempty"`
	Proxy   *Proxy       `json:"proxy,omitempty"`
	Config  *ProxyConfig `json:"config,omitempty"`
	Conn    *Connection  `json:"conn,omitempty"`
	Deleted bool         `json:"del,omitempty"`
}

// Tape returns the message's changes as a tape; nil when there are none.
func (m UpdateMsg) Tape() []byte {
	if len(m.changes) == 0 {
		return nil
	}
	out := make([]tapeChange, 0, len(m.changes))
	for _, c := range m.changes {
		tc := tapeChange{Deleted: c.deleted}
		switch v := c.value.(type) {
		case Node:
			tc.Node = &v
		case Pod:
			tc.Pod = &v
		case Lease:
			tc.Lease = &v
		case Proxy:
			tc.Proxy = &v
		case ProxyConfig:
			tc.Config = &v
		case Connection:
			tc.Conn = &v
		default:
			continue
		}
		out = append(out, tc)
	}
	b, _ := json.Marshal(out)
	return b
}

// Play folds a tape into the state as Apply folds the message it was
// recorded from.
func (s *State) Play(tape []byte) error {
	var tcs []tapeChange
	if err := json.Unmarshal(tape, &tcs); err != nil {
		return err
	}
	msg := UpdateMsg{changes: make([]change, 0, len(tcs))}
	for i, tc := range tcs {
		c := change{deleted: tc.Deleted}
		switch {
		case tc.Node != nil:
			c.value = *tc.Node
		case tc.Pod != nil:
			c.value = *tc.Pod
		case tc.Lease != nil:
			c.value = *tc.Lease
		case tc.Proxy != nil:
			c.value = *tc.Proxy
		case tc.Config != nil:
			c.value = *tc.Config
		case tc.Conn != nil:
			c.value = *tc.Conn
		default:
			return fmt.Errorf("change %d names no kind (node, pod, lease, proxy, config, conn)", i+1)
		}
		msg.changes = append(msg.changes, c)
	}
	s.Apply(msg)
	return nil
}

// Keyframe returns a tape that, played on an empty state, brings it to
// this one.
func (s *State) Keyframe() []byte {
	msg := UpdateMsg{changes: []change{{value: s.Conn}, {value: s.ProxyConfig}}}
	msg.changes = appendValues(msg.changes, s.nodes)
	msg.changes = appendValues(msg.changes, s.pods)
	msg.changes = appendValues(msg.changes, s.leases)
	msg.changes = appendValues(msg.changes, s.proxies)
	return msg.Tape()
}

// appendValues appends m's values as changes, in the order of their keys.
func appendValues[V any](out []change, m map[string]V) []change {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, change{value: m[k]})
	}
	return out
}
