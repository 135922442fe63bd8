package lessons

import (
	"maps"
	"sort"
)

// world is the cluster as the observations so far describe it. Checks are
// judged on two worlds: the one when the step began and the current one.
type world struct {
	members map[string]MemberObserved
	clocks  map[string]ClockObserved
	// sent counts raft messages by type since the Evaluator started.
	sent  map[string]int
	nodes map[string]bool // ready
	pods  map[string]PodObserved
	keys  map[string]string
	// commands are the commands that ended since the current step began.
	commands []CommandObserved
}

func newWorld() *world {
	return &world{
		members: map[string]MemberObserved{},
		clocks:  map[string]ClockObserved{},
		sent:    map[string]int{},
		nodes:   map[string]bool{},
		pods:    map[string]PodObserved{},
		keys:    map[string]string{},
	}
}

// apply records one observation.
func (w *world) apply(obs Observation) {
	switch o := obs.(type) {
	case MemberObserved:
		w.members[o.Member] = o
	case ClockObserved:
		w.clocks[o.Member] = o
	case MessageObserved:
		w.sent[o.Type] += max(o.Count, 1)
	case NodeObserved:
		if o.Deleted {
			delete(w.nodes, o.Node)
		} else {
			w.nodes[o.Node] = o.Ready
		}
	case PodObserved:
		key := o.Namespace + "/" + o.Name
		if o.Deleted {
			delete(w.pods, key)
		} else {
			// The labels are copied: the caller may reuse its map.
			o.Labels = maps.Clone(o.Labels)
			w.pods[key] = o
		}
	case KeyObserved:
		if o.Deleted {
			delete(w.keys, o.Key)
		} else {
			w.keys[o.Key] = o.Value
		}
	case CommandObserved:
		o.Args = append([]string(nil), o.Args...)
		w.commands = append(w.commands, o)
	}
}

// clone returns a copy that later observations do not change.
func (w *world) clone() *world {
	return &world{
		members:  maps.Clone(w.members),
		clocks:   maps.Clone(w.clocks),
		sent:     maps.Clone(w.sent),
		nodes:    maps.Clone(w.nodes),
		pods:     maps.Clone(w.pods),
		keys:     maps.Clone(w.keys),
		commands: append([]CommandObserved(nil), w.commands...),
	}
}

// leaders returns the members that say they lead, highest term first.
// There can be two for a while: an old leader cut off from the others still
// believes it leads until its check-quorum timeout, and the last word of a
// member that died is its last observation until it is seen to be gone.
func (w *world) leaders() []MemberObserved {
	var out []MemberObserved
	for _, m := range w.members {
		if m.State == MemberLeader {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Term != out[j].Term {
			return out[i].Term > out[j].Term
		}
		return out[i].Member < out[j].Member
	})
	return out
}

// leader returns the leader in the highest term.
func (w *world) leader() (MemberObserved, bool) {
	ls := w.leaders()
	if len(ls) == 0 {
		return MemberObserved{}, false
	}
	return ls[0], true
}

// maxTerm returns the highest term any member reports.
func (w *world) maxTerm() uint64 {
	var t uint64
	for _, m := range w.members {
		t = max(t, m.Term)
	}
	return t
}

// running counts the members that have a raft role.
func (w *world) running() int {
	n := 0
	for _, m := range w.members {
		if m.State.running() {
			n++
		}
	}
	return n
}

// memberNames returns the members' names, sorted.
func (w *world) memberNames() []string {
	names := make([]string, 0, len(w.members))
	for n := range w.members {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
