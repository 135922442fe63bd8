package proxy

import (
	"encoding/json"
	"errors"
	"fmt"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
)

// tape is one message of the view's sources as the recording keeps it; K
// says which: "err" (connecting or watching failed), "services" (the
// Services with their endpoints, all of them), "stream" (the kube-proxy's
// event stream opened, or Err says why not), "ended" (it ended), "rules"
// (a fetch of the node's statuses and rules: Rules is left out when they
// are those of the fetch before, which a busy cluster's many fetches
// mostly are), "switched" (a mode switch finished), "traffic" (a burst's
// results came: Burst is the chart after them, whole, as it is a few lines).
type tape struct {
	K        string          `json:"k"`
	Err      string          `json:"err,omitempty"`
	Services []service       `json:"svcs,omitempty"`
	Node     string          `json:"node,omitempty"`
	Statuses []lab.NodeProxy `json:"st,omitempty"`
	Rules    *string         `json:"rules,omitempty"`
	Mode     string          `json:"mode,omitempty"`
	Nodes    []lab.NodeProxy `json:"nodes,omitempty"`
	Burst    *burstTape      `json:"burst,omitempty"`
}

// burstTape is a burst of traffic as the chart draws it.
type burstTape struct {
	Service  string         `json:"svc"`
	Node     string         `json:"node"`
	Count    int            `json:"count"`
	Received int            `json:"recv"`
	Pods     []podTape      `json:"pods,omitempty"`
	Failures []failureTape  `json:"fail,omitempty"`
	Modes    map[string]int `json:"modes,omitempty"`
	Done     bool           `json:"done,omitempty"`
	Err      string         `json:"err,omitempty"`
}

type podTape struct {
	Pod   string `json:"pod"`
	Node  string `json:"node,omitempty"`
	Count int    `json:"n"`
}

type failureTape struct {
	Stage  string `json:"stage"`
	Reason string `json:"reason,omitempty"`
	Count  int    `json:"n"`
}

// tapeOf returns the burst as the recording keeps it.
func (b *burst) tapeOf() *burstTape {
	t := &burstTape{Service: b.service, Node: b.node, Count: b.count, Received: b.received,
		Modes: b.modes, Done: b.done, Err: errText(b.err)}
	for _, p := range b.pods {
		t.Pods = append(t.Pods, podTape{Pod: p.pod, Node: p.node, Count: p.count})
	}
	for _, f := range b.failures {
		t.Failures = append(t.Failures, failureTape{Stage: f.stage, Reason: f.reason, Count: f.count})
	}
	return t
}

// burstOf returns the burst a tape keeps.
func burstOf(t *burstTape) *burst {
	b := newBurst(t.Service, t.Node, t.Count)
	b.received, b.done, b.err = t.Received, t.Done, errOf(t.Err)
	for m, n := range t.Modes {
		b.modes[m] = n
	}
	for _, p := range t.Pods {
		b.pods = append(b.pods, podCount{pod: p.Pod, node: p.Node, count: p.Count})
	}
	for _, f := range t.Failures {
		b.failures = append(b.failures, failureCount{stage: f.Stage, reason: f.Reason, count: f.Count})
	}
	return b
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

// Tape records a message of the view's sources, before Update takes it.
// The kube-proxy's events change nothing drawn (the fetch they start
// does), so they are not recorded; a burst of traffic is, each time its
// results come, as the chart draws it after them.
func (v *View) Tape(msg tea.Msg) []byte {
	var t tape
	switch msg := msg.(type) {
	case connectedMsg:
		if msg.epoch != v.epoch || msg.err == nil {
			return nil
		}
		t = tape{K: "err", Err: msg.err.Error()}
	case watchingMsg:
		if msg.epoch != v.epoch || msg.err == nil {
			return nil
		}
		t = tape{K: "err", Err: msg.err.Error()}
	case servicesMsg:
		if msg.epoch != v.epoch {
			return nil
		}
		t = tape{K: "services", Services: msg.services}
	case subscribedMsg:
		if msg.feed != v.feed {
			return nil
		}
		t = tape{K: "stream", Node: v.nodeName(), Err: errText(msg.err)}
	case streamEndedMsg:
		if msg.feed != v.feed {
			return nil
		}
		t = tape{K: "ended", Node: v.nodeName()}
	case rulesMsg:
		if msg.feed != v.feed {
			return nil
		}
		t = tape{K: "rules", Node: v.nodeName(), Statuses: msg.statuses, Err: errText(msg.err)}
		if msg.err == nil && (!v.fetched || msg.rules != v.rules) {
			r := msg.rules
			t.Rules = &r
		}
	case switchedMsg:
		if msg.epoch != v.epoch {
			return nil
		}
		t = tape{K: "switched", Mode: msg.mode, Nodes: msg.nodes, Err: errText(msg.err)}
	case trafficMsg:
		if v.burst == nil || msg.run != v.run {
			return nil
		}
		// The burst as Update leaves it, on a copy: Tape comes first.
		b := burstOf(v.burst.tapeOf())
		for _, r := range msg.results {
			b.add(r)
		}
		if msg.done {
			b.done, b.err = true, msg.err
		}
		t = tape{K: "traffic", Burst: b.tapeOf()}
	default:
		return nil
	}
	b, _ := json.Marshal(t)
	return b
}

// Replay forgets the Services and rules and readies the view to draw the
// cluster info describes from tapes. With no cluster to act on, the keys
// that would change it do nothing.
func (v *View) Replay(info *lab.Info) {
	if v.stopFeed != nil {
		v.stopFeed()
	}
	*v = View{c: v.c, connect: v.connect, width: v.width, height: v.height, epoch: v.epoch + 1, feed: v.feed + 1, run: v.run}
	v.info = info
	for _, n := range info.Nodes {
		v.nodes = append(v.nodes, n.Name)
	}
	v.node = 0
	for i, n := range info.Nodes {
		if n.Role == runtime.RoleWorker {
			v.node = i
			break
		}
	}
}

// Play folds a tape into the view as Update folds the message it was
// recorded from, without the fetches and follows Update starts.
func (v *View) Play(b []byte) error {
	if len(b) > 0 && b[0] == '[' {
		// A keyframe: several tapes.
		var ts []json.RawMessage
		if err := json.Unmarshal(b, &ts); err != nil {
			return err
		}
		for _, t := range ts {
			if err := v.Play(t); err != nil {
				return err
			}
		}
		return nil
	}
	var t tape
	if err := json.Unmarshal(b, &t); err != nil {
		return err
	}
	v.playNode(t.Node)
	switch t.K {
	case "err":
		v.err = errOf(t.Err)
	case "services":
		first := !v.listed
		v.services, v.listed = t.Services, true
		if v.current() == nil {
			v.selectService(firstChoice(v.services))
		} else {
			v.updateShown()
		}
		if !first {
			v.dirty = true
		}
	case "stream":
		v.streamErr = errOf(t.Err)
		v.following = t.Err == ""
	case "ended":
		v.following, v.streamErr = false, errStreamEnded
	case "rules":
		if t.Statuses != nil {
			v.statuses = t.Statuses
		}
		v.rulesErr = errOf(t.Err)
		if t.Err == "" {
			if t.Rules != nil {
				v.rules = *t.Rules
			}
			v.fetched = true
			v.updateShown()
		}
	case "switched":
		v.switching = ""
		v.outcome = switchOutcome(switchedMsg{mode: t.Mode, nodes: t.Nodes, err: errOf(t.Err)})
	case "traffic":
		if t.Burst == nil {
			return fmt.Errorf("a %q tape without its burst", t.K)
		}
		v.burst = burstOf(t.Burst)
	default:
		return fmt.Errorf("unknown kind %q", t.K)
	}
	return nil
}

// playNode follows node's kube-proxy, as the user chose it when the tape
// was recorded.
func (v *View) playNode(node string) {
	if node == "" || node == v.nodeName() {
		return
	}
	for i, n := range v.nodes {
		if n == node {
			v.node = i
			v.rules, v.rulesErr, v.fetched = "", nil, false
			v.diff, v.whole, v.scroll, v.shown, v.shownFor = nil, false, 0, nil, ""
		}
	}
}

// Keyframe returns the Services, the stream's state, the last rules and
// the last burst of traffic as one tape each, joined in a JSON array.
func (v *View) Keyframe() []byte {
	var ts []tape
	if v.err != nil {
		ts = append(ts, tape{K: "err", Err: v.err.Error()})
	}
	if v.listed {
		ts = append(ts, tape{K: "services", Services: v.services})
	}
	switch {
	case v.following:
		ts = append(ts, tape{K: "stream", Node: v.nodeName()})
	case v.streamErr != nil:
		ts = append(ts, tape{K: "stream", Node: v.nodeName(), Err: v.streamErr.Error()})
	}
	if v.fetched || v.rulesErr != nil || v.statuses != nil {
		r := v.rules
		ts = append(ts, tape{K: "rules", Node: v.nodeName(), Statuses: v.statuses, Rules: &r, Err: errText(v.rulesErr)})
	}
	if v.burst != nil {
		ts = append(ts, tape{K: "traffic", Burst: v.burst.tapeOf()})
	}
	if len(ts) == 0 {
		return nil
	}
	b, _ := json.Marshal(ts)
	return b
}
