package mvcc

import (
	"bytes"
	"sort"

	"github.com/google/btree"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// entry is one change of one key: a put (kv holds the whole new KeyValue) or
// a tombstone (kv holds only the key, as etcd stores it).
type entry struct {
	rev       revision
	tombstone bool
	kv        *mvccpb.KeyValue
	// prev is the key's previous change while it is still in history; a
	// watcher with prev_kv reports it. Compaction clears it when it drops
	// the previous change, as etcd then can no longer read it either.
	prev *entry
	// compacted marks an entry dropped by compaction, so the change log can
	// be filtered in one pass.
	compacted bool
}

// keyHistory is every change of one key still in history, oldest first.
type keyHistory struct {
	key     []byte
	entries []*entry
}

func lessKeyHistory(a, b *keyHistory) bool { return bytes.Compare(a.key, b.key) < 0 }

// at returns the key's change in effect at main revision rev, or nil if the
// key did not exist then (no change yet, or the last change was a delete).
func (h *keyHistory) at(rev int64) *entry {
	i := sort.Search(len(h.entries), func(i int) bool { return h.entries[i].rev.main > rev })
	if i == 0 {
		return nil
	}
	e := h.entries[i-1]
	if e.tombstone {
		return nil
	}
	return e
}

// latest returns the key's last change, tombstone included, or nil.
func (h *keyHistory) latest() *entry {
	if len(h.entries) == 0 {
		return nil
	}
	return h.entries[len(h.entries)-1]
}

// index is the in-memory state: the keys with their histories, and every
// change in revision order for watchers.
type index struct {
	tree *btree.BTreeG[*keyHistory]
	log  []*entry
}

func newIndex() *index {
	return &index{tree: btree.NewG(32, lessKeyHistory)}
}

// add appends a change; changes must arrive in revision order.
func (ix *index) add(e *entry) {
	h, ok := ix.tree.Get(&keyHistory{key: e.kv.Key})
	if !ok {
		h = &keyHistory{key: e.kv.Key}
		ix.tree.ReplaceOrInsert(h)
	}
	e.prev = h.latest()
	h.entries = append(h.entries, e)
	ix.log = append(ix.log, e)
}

// get returns the history of one key, or nil.
func (ix *index) get(key []byte) *keyHistory {
	h, _ := ix.tree.Get(&keyHistory{key: key})
	return h
}

// visit calls f for each key history in [key, end) in key order until f
// returns false. end nil means the single key; an empty non-nil end means
// every key from key on, as etcd's range_end "\x00" does.
func (ix *index) visit(key, end []byte, f func(h *keyHistory) bool) {
	switch {
	case end == nil:
		if h := ix.get(key); h != nil {
			f(h)
		}
	case len(end) == 0:
		ix.tree.AscendGreaterOrEqual(&keyHistory{key: key}, f)
	default:
		if bytes.Compare(key, end) >= 0 {
			return
		}
		ix.tree.AscendRange(&keyHistory{key: key}, &keyHistory{key: end}, f)
	}
}

// logFrom returns the position in the change log of the first change with a
// main revision >= rev.
func (ix *index) logFrom(rev int64) int {
	return sort.Search(len(ix.log), func(i int) bool { return ix.log[i].rev.main >= rev })
}

// compact drops, for every key, the changes at or below rev except the last
// one, and drops that one too if it is a tombstone older than rev, so a
// deleted key disappears entirely. A tombstone exactly at rev stays, as in
// etcd, so that watching from the compaction revision still sees its
// deletes. It returns the dropped changes.
func (ix *index) compact(rev int64) []*entry {
	var dropped []*entry
	var emptied []*keyHistory
	ix.tree.Ascend(func(h *keyHistory) bool {
		// keep is the position of the last change at or below rev.
		keep := sort.Search(len(h.entries), func(i int) bool { return h.entries[i].rev.main > rev }) - 1
		if keep >= 0 && h.entries[keep].tombstone && h.entries[keep].rev.main < rev {
			keep++
		}
		if keep <= 0 {
			return true
		}
		for _, e := range h.entries[:keep] {
			e.compacted = true
			dropped = append(dropped, e)
		}
		h.entries = append([]*entry(nil), h.entries[keep:]...)
		if len(h.entries) == 0 {
			emptied = append(emptied, h)
		} else {
			h.entries[0].prev = nil
		}
		return true
	})
	for _, h := range emptied {
		ix.tree.Delete(h)
	}
	if len(dropped) > 0 {
		kept := make([]*entry, 0, len(ix.log)-len(dropped))
		for _, e := range ix.log {
			if !e.compacted {
				kept = append(kept, e)
			}
		}
		ix.log = kept
	}
	return dropped
}
