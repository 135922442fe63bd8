// Package fault is the network-fault layer that klab's in-process links consult.
//
// A Table holds, for each directed link between two members, what the network
// does to traffic on it: deliver, drop with a probability, delay, or cut it
// entirely. The local runtime uses it to emulate partitions; the raft
// transport asks it about every message it sends and receives. Links are
// directed so that an asymmetric partition can be expressed, but the helpers
// that most callers use (Partition, Heal) act on both directions at once.
package fault

import (
	"math/rand/v2"
	"sort"
	"sync"
	"time"
)

// Rule is what happens to traffic on one directed link.
type Rule struct {
	// Cut drops everything, as an unplugged cable would.
	Cut bool `json:"cut,omitempty"`
	// DropRate is the probability (0–1) that one message is lost.
	DropRate float64 `json:"dropRate,omitempty"`
	// Delay is added before each message is delivered.
	Delay time.Duration `json:"delay,omitempty"`
}

// Link names a directed link from one member to another by member name.
type Link struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Table is a concurrency-safe set of rules keyed by directed link. The zero
// value is not usable; call NewTable. A nil *Table is valid and means "no
// faults": every method on it reports a healthy network.
type Table struct {
	mu    sync.RWMutex
	rules map[Link]Rule
	// changed is closed and replaced whenever the rules change, so that
	// watchers (the UI, a blocked sender) can react without polling.
	changed chan struct{}
}

// NewTable returns an empty table: a healthy network.
func NewTable() *Table {
	return &Table{rules: map[Link]Rule{}, changed: make(chan struct{})}
}

// Set replaces the rule of one directed link. A zero Rule removes it.
func (t *Table) Set(from, to string, r Rule) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r == (Rule{}) {
		delete(t.rules, Link{from, to})
	} else {
		t.rules[Link{from, to}] = r
	}
	t.notifyLocked()
}

// Partition cuts every link, in both directions, between each member of a and
// each member of b. Links inside a group are left alone.
func (t *Table) Partition(a, b []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, x := range a {
		for _, y := range b {
			if x == y {
				continue
			}
			t.rules[Link{x, y}] = Rule{Cut: true}
			t.rules[Link{y, x}] = Rule{Cut: true}
		}
	}
	t.notifyLocked()
}

// Isolate cuts every link between name and each of others, both ways.
func (t *Table) Isolate(name string, others []string) { t.Partition([]string{name}, others) }

// Heal removes every rule: the network is healthy again.
func (t *Table) Heal() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rules = map[Link]Rule{}
	t.notifyLocked()
}

// HealMember removes every rule on links to or from name.
func (t *Table) HealMember(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for l := range t.rules {
		if l.From == name || l.To == name {
			delete(t.rules, l)
		}
	}
	t.notifyLocked()
}

// Rule returns the rule for the directed link from → to.
func (t *Table) Rule(from, to string) Rule {
	if t == nil {
		return Rule{}
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.rules[Link{from, to}]
}

// Deliver decides the fate of one message on from → to: whether it arrives
// and after how long. It is what a transport calls for every message.
func (t *Table) Deliver(from, to string) (ok bool, delay time.Duration) {
	r := t.Rule(from, to)
	if r.Cut {
		return false, 0
	}
	if r.DropRate > 0 && rand.Float64() < r.DropRate {
		return false, 0
	}
	return true, r.Delay
}

// Rules returns a copy of every rule in effect, sorted by link.
func (t *Table) Rules() map[Link]Rule {
	out := map[Link]Rule{}
	if t == nil {
		return out
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	for l, r := range t.rules {
		out[l] = r
	}
	return out
}

// Links returns the links that have a rule, in a stable order.
func (t *Table) Links() []Link {
	rules := t.Rules()
	links := make([]Link, 0, len(rules))
	for l := range rules {
		links = append(links, l)
	}
	sort.Slice(links, func(i, j int) bool {
		if links[i].From != links[j].From {
			return links[i].From < links[j].From
		}
		return links[i].To < links[j].To
	})
	return links
}

// Changed returns a channel that is closed at the next change of the rules.
func (t *Table) Changed() <-chan struct{} {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.changed
}

func (t *Table) notifyLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}
