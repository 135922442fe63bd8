package mvcc

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// modelKV is what the model remembers of a key.
type modelKV struct {
	value                string
	create, mod, version int64
}

// model is a plain map per revision: the simplest possible MVCC store.
type model struct {
	rev       int64
	snapshots map[int64]map[string]modelKV
}

func newModel() *model {
	return &model{rev: 1, snapshots: map[int64]map[string]modelKV{1: {}}}
}

// apply runs f on a copy of the current state and records a new revision
// if f changed anything.
func (m *model) apply(f func(next map[string]modelKV, rev int64) bool) {
	next := make(map[string]modelKV, len(m.snapshots[m.rev]))
	for k, v := range m.snapshots[m.rev] {
		next[k] = v
	}
	if f(next, m.rev+1) {
		m.rev++
		m.snapshots[m.rev] = next
	}
}

func modelPut(state map[string]modelKV, rev int64, key, value string) {
	kv := modelKV{value: value, create: rev, mod: rev, version: 1}
	if old, ok := state[key]; ok {
		kv.create, kv.version = old.create, old.version+1
	}
	state[key] = kv
}

// render lists keys in [key, end) at rev the way dumpAt renders the store.
func (m *model) render(rev int64, key, end string) string {
	state := m.snapshots[rev]
	var keys []string
	for k := range state {
		if k >= key && (end == "\x00" || k < end) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		kv := state[k]
		fmt.Fprintf(&b, "%s=%s c%d m%d v%d;", k, kv.value, kv.create, kv.mod, kv.version)
	}
	return b.String()
}

func renderResp(resp *pb.RangeResponse) string {
	var b strings.Builder
	for _, kv := range resp.Kvs {
		fmt.Fprintf(&b, "%s=%s c%d m%d v%d;", kv.Key, kv.Value, kv.CreateRevision, kv.ModRevision, kv.Version)
	}
	return b.String()
}

// TestRandomAgainstModel runs random writes, compactions and reopens and
// compares ranges at random revisions with the model.
func TestRandomAgainstModel(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			ts := newTestStore(t)
			m := newModel()
			compactRev := int64(0)
			key := func() string { return fmt.Sprintf("%c%d", 'a'+rng.Intn(3), rng.Intn(3)) }
			for step := range 400 {
				switch op := rng.Intn(10); {
				case op < 5:
					k, v := key(), fmt.Sprint(step)
					ts.put(k, v)
					m.apply(func(s map[string]modelKV, rev int64) bool { modelPut(s, rev, k, v); return true })
				case op < 7:
					k := key()
					end := ""
					if rng.Intn(2) == 0 {
						end = string(rune(k[0] + 1))
						k = k[:1]
					}
					ts.del(k, end)
					m.apply(func(s map[string]modelKV, _ int64) bool {
						changed := false
						for sk := range s {
							if sk == k || (end != "" && sk >= k && sk < end) {
								delete(s, sk)
								changed = true
							}
						}
						return changed
					})
				case op < 9:
					k1, k2 := key(), key()
					if k1 == k2 {
						continue
					}
					ts.txn(&pb.TxnRequest{Success: []*pb.RequestOp{putOp(k1, "t1"), putOp(k2, "t2")}})
					m.apply(func(s map[string]modelKV, rev int64) bool {
						modelPut(s, rev, k1, "t1")
						modelPut(s, rev, k2, "t2")
						return true
					})
				default:
					if m.rev > compactRev+1 {
						compactRev += 1 + rng.Int63n(m.rev-compactRev)
						ts.compact(compactRev)
					}
					if rng.Intn(3) == 0 {
						ts.reopen()
					}
				}
				if ts.s.Rev() != m.rev {
					t.Fatalf("step %d: revision %d, model %d", step, ts.s.Rev(), m.rev)
				}
				for range 3 {
					rev := max(compactRev, 1) + rng.Int63n(m.rev-max(compactRev, 1)+1)
					k, end := key(), "\x00"
					if rng.Intn(2) == 0 {
						end = string(rune(k[0] + 1))
						k = k[:1]
					}
					resp, err := ts.s.Range(&pb.RangeRequest{Key: []byte(k), RangeEnd: []byte(end), Revision: rev})
					if err != nil {
						t.Fatalf("step %d: range at %d: %v", step, rev, err)
					}
					if got, want := renderResp(resp), m.render(rev, k, end); got != want {
						t.Fatalf("step %d: range [%q, %q) at %d:\n got %s\nwant %s", step, k, end, rev, got, want)
					}
				}
			}
		})
	}
}
