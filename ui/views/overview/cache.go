package overview

import (
	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/ui/kubestate"
)

// A frame redraws every node, but an update changes few: the drawn box or
// row of each node is kept with a fingerprint of everything it shows, and
// drawn again only when that changes. A frame keeps only what it used, so
// the caches hold one screenful.

// nodeKey is everything a node's box or row shows.
type nodeKey struct {
	lang                i18n.Lang
	name, host, cidr    string
	master              bool
	kube                kubestate.Node
	hasKube, registered bool
	synced              bool
	member              memberKey
	comps               [maxComps]comp
	proxy               kubestate.Proxy
	hasProxy            bool
	wantMode            string
	pods                kubestate.PodCounts
	sched, cm           bool
}

type memberKey struct {
	role, health          string
	running, hasStatus    bool
	term, commit, applied uint64
}

func keyOf(n *node) nodeKey {
	k := nodeKey{
		lang: i18n.Current(), name: n.name, host: n.host, cidr: n.cidr, master: n.master,
		registered: n.registered, synced: n.synced, proxy: n.proxy, hasProxy: n.hasProxy,
		wantMode: n.wantMode, pods: n.pods, sched: n.sched, cm: n.cm,
	}
	if n.kube != nil {
		k.kube, k.hasKube = *n.kube, true
	}
	if m := n.member; m != nil {
		k.member = memberKey{role: m.Role(), health: m.Health(), running: m.Running(), hasStatus: m.HasStatus,
			term: m.Status.Term, commit: m.Status.Commit, applied: m.Status.Applied}
	}
	copy(k.comps[:], n.comps)
	return k
}

// boxKey identifies a drawn box.
type boxKey struct {
	node          nodeKey
	inner, height int
	detail        detail
}

// rowKey identifies a drawn row.
type rowKey struct {
	node  nodeKey
	cols  colWidths
	width int
}

// memo keeps, for each node by name, the last value drawn and the key it
// was drawn for.
type memo[K comparable, V any] struct {
	// Entries are pointers: a key is too big for a map to hold inline,
	// and an entry kept from one frame to the next is not copied.
	last, next map[string]*memoEntry[K, V]
}

type memoEntry[K comparable, V any] struct {
	key K
	val V
}

// get returns what draw returned for key, drawing again if the node's key
// changed.
func (m *memo[K, V]) get(name string, key K, draw func() V) V {
	if m.next == nil {
		m.next = make(map[string]*memoEntry[K, V], len(m.last))
	}
	if e, ok := m.last[name]; ok && e.key == key {
		m.next[name] = e
		return e.val
	}
	e := &memoEntry[K, V]{key: key, val: draw()}
	m.next[name] = e
	return e.val
}

// endFrame keeps what the frame used and drops the rest. A memo the
// frame did not use keeps what it had.
func (m *memo[K, V]) endFrame() {
	if len(m.next) > 0 {
		m.last, m.next = m.next, m.last
		clear(m.next)
	}
}

// caches are the view's memos.
type caches struct {
	boxes memo[boxKey, []string]
	cells memo[nodeKey, row]
	rows  memo[rowKey, string]
}

func (c *caches) endFrame() {
	c.boxes.endFrame()
	c.cells.endFrame()
	c.rows.endFrame()
}
