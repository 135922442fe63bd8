package lessons

import (
	"maps"
	"sort"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// maxStepEvents bounds the events (Kubernetes Events, API requests) a world
// keeps for one step: the oldest are dropped past it. A check judges each
// one as it arrives, so a dropped one has been judged already; only a check
// in an all that waits for something else may miss one that old (a busy
// lab serves a few requests a second, so several minutes' worth).
const maxStepEvents = 4096

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
	// objects are the watched Kubernetes objects by resource, then by
	// namespace/name.
	objects map[schema.GroupResource]map[string]ObjectObserved
	// proxies are the kube-proxies by node.
	proxies map[string]ProxyObserved
	// events and requests happened since the current step began; traffic
	// is the last traffic run since then, nil if none.
	events   []EventObserved
	requests []RequestObserved
	// etcdRequests are the etcd members' client requests since then.
	etcdRequests []EtcdRequestObserved
	traffic      *TrafficObserved
}

func newWorld() *world {
	return &world{
		members: map[string]MemberObserved{},
		clocks:  map[string]ClockObserved{},
		sent:    map[string]int{},
		nodes:   map[string]bool{},
		pods:    map[string]PodObserved{},
		keys:    map[string]string{},
		objects: map[schema.GroupResource]map[string]ObjectObserved{},
		proxies: map[string]ProxyObserved{},
	}
}

// forgetStep drops what counts per step: what happened before the step
// that begins now.
func (w *world) forgetStep() {
	w.commands, w.events, w.requests, w.etcdRequests, w.traffic = nil, nil, nil, nil, nil
}

// appendBounded appends v to list, dropping the oldest past maxStepEvents.
func appendBounded[T any](list []T, v T) []T {
	if len(list) >= maxStepEvents {
		list = append(list[:0:0], list[len(list)-maxStepEvents+1:]...)
	}
	return append(list, v)
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
	case ObjectObserved:
		key := o.Namespace + "/" + o.Name
		byName := w.objects[o.Resource]
		if o.Deleted {
			delete(byName, key)
			return
		}
		if byName == nil {
			byName = map[string]ObjectObserved{}
			w.objects[o.Resource] = byName
		}
		byName[key] = o
	case EventObserved:
		w.events = appendBounded(w.events, o)
	case RequestObserved:
		w.requests = appendBounded(w.requests, o)
	case EtcdRequestObserved:
		w.etcdRequests = appendBounded(w.etcdRequests, o)
	case ProxyObserved:
		o.Services = maps.Clone(o.Services)
		w.proxies[o.Node] = o
	case TrafficObserved:
		o.Pods = maps.Clone(o.Pods)
		o.Nodes, o.Modes = maps.Clone(o.Nodes), maps.Clone(o.Modes)
		w.traffic = &o
	}
}

// clone returns a copy that later observations do not change.
func (w *world) clone() *world {
	return &world{
		members:      maps.Clone(w.members),
		clocks:       maps.Clone(w.clocks),
		sent:         maps.Clone(w.sent),
		nodes:        maps.Clone(w.nodes),
		pods:         maps.Clone(w.pods),
		keys:         maps.Clone(w.keys),
		commands:     append([]CommandObserved(nil), w.commands...),
		objects:      cloneObjects(w.objects),
		proxies:      maps.Clone(w.proxies),
		events:       append([]EventObserved(nil), w.events...),
		requests:     append([]RequestObserved(nil), w.requests...),
		etcdRequests: append([]EtcdRequestObserved(nil), w.etcdRequests...),
		traffic:      w.traffic,
	}
}

// cloneObjects copies the maps, not the objects: an object observed is
// never changed, only replaced.
func cloneObjects(in map[schema.GroupResource]map[string]ObjectObserved) map[schema.GroupResource]map[string]ObjectObserved {
	out := make(map[schema.GroupResource]map[string]ObjectObserved, len(in))
	for r, byName := range in {
		out[r] = maps.Clone(byName)
	}
	return out
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
