package scheduler

import (
	"sort"
	"strings"

	sched "github.com/klab-dev/klab/cluster/scheduler"
)

// maxPods bounds the pods the view remembers; the scheduler itself keeps
// its last 200 decisions.
const maxPods = 100

// podEntry is what the view knows about one pod: its latest scheduling
// attempt and what became of the binding.
type podEntry struct {
	Key      string // namespace/name
	Decision sched.Decision
	// Bound is set once the binding of a Scheduled decision landed;
	// BindError when it failed.
	Bound     bool
	BindError string
}

// source is one master's kube-scheduler as the view follows it.
type source struct {
	Node string
	// Connected: its event stream is open. Err is why it is not, after an
	// attempt failed; both are unset before the first attempt ends.
	Connected bool
	Err       string
	// Leading: the scheduler said it holds the lease.
	Leading bool
}

// pods keeps the latest decision of each recent pod, the most recent
// first.
type pods struct {
	list []*podEntry
}

// add records a decision, replacing an older one about the same pod.
func (p *pods) add(d sched.Decision) {
	key := d.Pod()
	for i, e := range p.list {
		if e.Key != key {
			continue
		}
		if d.Time.Before(e.Decision.Time) {
			return // an older attempt, replayed by another scheduler
		}
		p.list = append(p.list[:i], p.list[i+1:]...)
		break
	}
	e := &podEntry{Key: key, Decision: d, BindError: d.BindError}
	i := sort.Search(len(p.list), func(i int) bool { return !p.list[i].Decision.Time.After(d.Time) })
	p.list = append(p.list, nil)
	copy(p.list[i+1:], p.list[i:])
	p.list[i] = e
	if len(p.list) > maxPods {
		p.list = p.list[:maxPods]
	}
}

// bind records the outcome of a binding.
func (p *pods) bind(pod, node, errMsg string) {
	for _, e := range p.list {
		if e.Key == pod && e.Decision.Node == node && e.Decision.Result == sched.ResultScheduled {
			e.Bound, e.BindError = errMsg == "", errMsg
			return
		}
	}
}

func (p *pods) index(key string) int {
	for i, e := range p.list {
		if e.Key == key {
			return i
		}
	}
	return -1
}

// holderNode turns a leader-election identity (master-1_<uuid>) into the
// node it names.
func holderNode(identity string) string {
	if i := strings.LastIndex(identity, "_"); i > 0 {
		return identity[:i]
	}
	return identity
}
