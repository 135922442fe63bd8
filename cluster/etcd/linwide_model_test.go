package etcd_test

// The sequential specification TestLinearizabilityWide checks histories
// against: etcd's keyspace over a few keys, with the store revision, each
// key's version, create and mod revisions and lease, and the set of live
// leases. Every response carries the header revision, so the check pins
// each operation to one revision; that is what lets one partition (the
// revision is global) be checked in reasonable time.
//
// Leases whose ID is odd expire on their own (they are granted with the
// minimum TTL and never kept alive); the model lets any of them expire,
// deleting its keys in one revision, before any operation: that is the
// model's one nondeterministic step.

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// wKeys is how many keys the wide test works on: /lw/k0 … /lw/k3.
const wKeys = 4

func wKey(i int) string { return "/lw/k" + strconv.Itoa(i) }

// wKV is one key as etcd reports it; Ver 0 means the key does not exist
// (and then every other field is zero).
type wKV struct {
	Val    string
	Ver    int64
	Create int64
	Mod    int64
	Lease  int64
}

// wState is the whole keyspace the test uses. Leases holds the live lease
// IDs in ascending order, so that equal states compare equal.
type wState struct {
	Rev    int64
	KV     [wKeys]wKV
	Leases string
}

type wOpKind uint8

const (
	wGet    wOpKind = iota // Range of one key
	wRange                 // Range of every key under /lw/
	wPut                   // Put, with a lease if Lease != 0
	wDelete                // DeleteRange of one key
	wTxn                   // If(Mod(Key)==Mod, Mod(Key2)==Mod2) Then(Put(Key, Val), Put(Key2, Val+"'")) Else(Get(Key), Get(Key2))
	wGrant                 // LeaseGrant with a client-chosen ID
	wRevoke                // LeaseRevoke
)

type wInput struct {
	Op        wOpKind
	Key, Key2 int
	Val       string
	Lease     int64
	Mod, Mod2 int64
}

// wOutput is what the client saw. Unknown marks an operation whose outcome
// the client cannot know; it may or may not have taken effect.
type wOutput struct {
	Unknown       bool
	Rev           int64 // the response header's revision (not checked for grant and revoke)
	LeaseNotFound bool  // put or revoke refused: the lease does not exist
	KV            wKV   // get
	KVs           [wKeys]wKV
	Deleted       int64
	Succeeded     bool
}

// wExpiring says whether a lease expires during the run.
func wExpiring(id int64) bool { return id%2 == 1 }

func wLeaseIDs(s string) []int64 {
	if s == "" {
		return nil
	}
	var ids []int64
	for _, f := range strings.Split(s, ",") {
		id, _ := strconv.ParseInt(f, 10, 64)
		ids = append(ids, id)
	}
	return ids
}

func wLeaseString(ids []int64) string {
	slices.Sort(ids)
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	return b.String()
}

func (s wState) hasLease(id int64) bool { return slices.Contains(wLeaseIDs(s.Leases), id) }

// revoke removes a lease and deletes its keys, in one revision if it has
// any: what both LeaseRevoke and expiry do.
func (s wState) revoke(id int64) wState {
	ids := slices.DeleteFunc(wLeaseIDs(s.Leases), func(x int64) bool { return x == id })
	s.Leases = wLeaseString(ids)
	deleted := false
	for i := range s.KV {
		if s.KV[i].Ver > 0 && s.KV[i].Lease == id {
			s.KV[i] = wKV{}
			deleted = true
		}
	}
	if deleted {
		s.Rev++
	}
	return s
}

// put writes one key at revision s.Rev (the caller has advanced it).
func (s wState) put(k int, val string, lease int64) wState {
	kv := s.KV[k]
	if kv.Ver == 0 {
		kv.Create = s.Rev
	}
	kv.Ver++
	kv.Mod = s.Rev
	kv.Val = val
	kv.Lease = lease
	s.KV[k] = kv
	return s
}

// expiries returns s and every state reached from it by expiring some of
// its expiring leases.
func (s wState) expiries() []wState {
	var exp []int64
	for _, id := range wLeaseIDs(s.Leases) {
		if wExpiring(id) {
			exp = append(exp, id)
		}
	}
	out := []wState{s}
	for mask := 1; mask < 1<<len(exp); mask++ {
		t := s
		for i, id := range exp {
			if mask&(1<<i) != 0 {
				t = t.revoke(id)
			}
		}
		out = append(out, t)
	}
	return out
}

// wApply is the deterministic part of the specification: the states op
// may lead to from s (none if its output is impossible; two if its outcome
// is unknown: not applied, or applied).
func wApply(s wState, in wInput, out wOutput) []wState {
	unchanged := func(ok bool) []wState {
		if ok {
			return []wState{s}
		}
		return nil
	}
	// written is s after a write that took effect at the next revision, if
	// the output allows it.
	written := func(n wState) []wState {
		switch {
		case out.Unknown:
			return []wState{s, n}
		case out.Rev == n.Rev:
			return []wState{n}
		}
		return nil
	}
	switch in.Op {
	case wGet:
		return unchanged(out.Rev == s.Rev && out.KV == s.KV[in.Key])
	case wRange:
		return unchanged(out.Rev == s.Rev && out.KVs == s.KV)
	case wPut:
		if in.Lease != 0 && !s.hasLease(in.Lease) {
			return unchanged(out.Unknown || out.LeaseNotFound)
		}
		if out.LeaseNotFound {
			return nil
		}
		n := s
		n.Rev++
		return written(n.put(in.Key, in.Val, in.Lease))
	case wDelete:
		if s.KV[in.Key].Ver == 0 {
			return unchanged(out.Unknown || (out.Rev == s.Rev && out.Deleted == 0))
		}
		n := s
		n.Rev++
		n.KV[in.Key] = wKV{}
		if !out.Unknown && out.Deleted != 1 {
			return nil
		}
		return written(n)
	case wTxn:
		holds := s.KV[in.Key].Mod == in.Mod && s.KV[in.Key2].Mod == in.Mod2
		if !holds {
			return unchanged(out.Unknown || (!out.Succeeded && out.Rev == s.Rev &&
				out.KVs[in.Key] == s.KV[in.Key] && out.KVs[in.Key2] == s.KV[in.Key2]))
		}
		if !out.Unknown && !out.Succeeded {
			return nil
		}
		n := s
		n.Rev++
		return written(n.put(in.Key, in.Val, 0).put(in.Key2, in.Val+"'", 0))
	case wGrant:
		if s.hasLease(in.Lease) {
			return nil // IDs are never reused
		}
		n := s
		n.Leases = wLeaseString(append(wLeaseIDs(s.Leases), in.Lease))
		if out.Unknown {
			return []wState{s, n}
		}
		return []wState{n}
	case wRevoke:
		if !s.hasLease(in.Lease) {
			return unchanged(out.Unknown || out.LeaseNotFound)
		}
		if out.LeaseNotFound {
			return nil
		}
		n := s.revoke(in.Lease)
		if out.Unknown {
			return []wState{s, n}
		}
		return []wState{n}
	}
	return nil
}

// wideModel returns the model for a run whose keyspace was empty at
// revision startRev.
func wideModel(startRev int64) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{wState{Rev: startRev}} },
		Step: func(state, input, output interface{}) []interface{} {
			var next []interface{}
			for _, pre := range state.(wState).expiries() {
				for _, n := range wApply(pre, input.(wInput), output.(wOutput)) {
					if !slices.ContainsFunc(next, func(x interface{}) bool { return x.(wState) == n }) {
						next = append(next, n)
					}
				}
			}
			return next
		},
		Equal: func(a, b interface{}) bool { return a.(wState) == b.(wState) },
		Hash: func(state interface{}) uint64 {
			h := fnv.New64a()
			fmt.Fprintf(h, "%v", state.(wState))
			return h.Sum64()
		},
		DescribeOperation: func(input, output interface{}) string {
			return wDescribe(input.(wInput), output.(wOutput))
		},
		DescribeState: func(state interface{}) string {
			s := state.(wState)
			var b strings.Builder
			fmt.Fprintf(&b, "rev %d", s.Rev)
			for i, kv := range s.KV {
				if kv.Ver > 0 {
					fmt.Fprintf(&b, " k%d=%q(v%d c%d m%d", i, kv.Val, kv.Ver, kv.Create, kv.Mod)
					if kv.Lease != 0 {
						fmt.Fprintf(&b, " lease %d", kv.Lease)
					}
					b.WriteString(")")
				}
			}
			if s.Leases != "" {
				fmt.Fprintf(&b, " leases [%s]", s.Leases)
			}
			return b.String()
		},
	}
	return nm.ToModel()
}

func wDescribe(in wInput, out wOutput) string {
	var op string
	switch in.Op {
	case wGet:
		op = fmt.Sprintf("get(k%d)", in.Key)
	case wRange:
		op = "range(/lw/)"
	case wPut:
		op = fmt.Sprintf("put(k%d, %s", in.Key, in.Val)
		if in.Lease != 0 {
			op += fmt.Sprintf(", lease %d", in.Lease)
		}
		op += ")"
	case wDelete:
		op = fmt.Sprintf("delete(k%d)", in.Key)
	case wTxn:
		op = fmt.Sprintf("txn(k%d mod==%d && k%d mod==%d ? put %s)", in.Key, in.Mod, in.Key2, in.Mod2, in.Val)
	case wGrant:
		op = fmt.Sprintf("grant(%d)", in.Lease)
	case wRevoke:
		op = fmt.Sprintf("revoke(%d)", in.Lease)
	}
	switch {
	case out.Unknown:
		return op + " -> unknown"
	case out.LeaseNotFound:
		return op + " -> lease not found"
	case in.Op == wGet:
		return fmt.Sprintf("%s -> %q v%d m%d @%d", op, out.KV.Val, out.KV.Ver, out.KV.Mod, out.Rev)
	case in.Op == wTxn:
		return fmt.Sprintf("%s -> %v @%d", op, out.Succeeded, out.Rev)
	case in.Op == wDelete:
		return fmt.Sprintf("%s -> %d @%d", op, out.Deleted, out.Rev)
	}
	return fmt.Sprintf("%s -> @%d", op, out.Rev)
}

// TestLinearizabilityWideModel makes sure wideModel refuses the histories
// TestLinearizabilityWide relies on it to refuse, and accepts the legal
// ones it would otherwise flag.
func TestLinearizabilityWideModel(t *testing.T) {
	op := func(client int, call, ret int64, in wInput, out wOutput) porcupine.Operation {
		if ret == math.MaxInt64 {
			out.Unknown = true
		}
		return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
	}
	put := func(c int, call, ret int64, k int, v string, lease, rev int64) porcupine.Operation {
		return op(c, call, ret, wInput{Op: wPut, Key: k, Val: v, Lease: lease}, wOutput{Rev: rev})
	}
	get := func(c int, call, ret int64, k int, kv wKV, rev int64) porcupine.Operation {
		return op(c, call, ret, wInput{Op: wGet, Key: k}, wOutput{Rev: rev, KV: kv})
	}
	kv := func(v string, ver, create, mod, lease int64) wKV {
		return wKV{Val: v, Ver: ver, Create: create, Mod: mod, Lease: lease}
	}
	grant := func(c int, call, ret, id int64) porcupine.Operation {
		return op(c, call, ret, wInput{Op: wGrant, Lease: id}, wOutput{})
	}
	revoke := func(c int, call, ret, id int64, notFound bool) porcupine.Operation {
		return op(c, call, ret, wInput{Op: wRevoke, Lease: id}, wOutput{LeaseNotFound: notFound})
	}
	tests := []struct {
		name string
		ops  []porcupine.Operation
		want porcupine.CheckResult
	}{
		{"read after write", []porcupine.Operation{put(0, 0, 10, 0, "a", 0, 2), get(1, 20, 30, 0, kv("a", 1, 2, 2, 0), 2)}, porcupine.Ok},
		{"stale read after write", []porcupine.Operation{put(0, 0, 10, 0, "a", 0, 2), get(1, 20, 30, 0, wKV{}, 1)}, porcupine.Illegal},
		{"read with the wrong revision", []porcupine.Operation{put(0, 0, 10, 0, "a", 0, 2), get(1, 20, 30, 0, kv("a", 1, 2, 2, 0), 3)}, porcupine.Illegal},
		{"two writes at one revision", []porcupine.Operation{put(0, 0, 10, 0, "a", 0, 2), put(1, 0, 10, 1, "b", 0, 2)}, porcupine.Illegal},
		{"version counted", []porcupine.Operation{put(0, 0, 10, 0, "a", 0, 2), put(0, 11, 20, 0, "b", 0, 3), get(1, 30, 40, 0, kv("b", 1, 3, 3, 0), 3)}, porcupine.Illegal},
		{"delete of a missing key keeps the revision", []porcupine.Operation{op(0, 0, 10, wInput{Op: wDelete, Key: 1}, wOutput{Rev: 1}), put(0, 11, 20, 1, "a", 0, 2)}, porcupine.Ok},
		{"unknown delete may have happened", []porcupine.Operation{put(0, 0, 10, 0, "a", 0, 2), op(1, 11, math.MaxInt64, wInput{Op: wDelete, Key: 0}, wOutput{}), get(2, 20, 30, 0, wKV{}, 3)}, porcupine.Ok},
		{"unknown delete may not have happened", []porcupine.Operation{put(0, 0, 10, 0, "a", 0, 2), op(1, 11, math.MaxInt64, wInput{Op: wDelete, Key: 0}, wOutput{}), get(2, 20, 30, 0, kv("a", 1, 2, 2, 0), 2)}, porcupine.Ok},
		{"cas whose compare held", []porcupine.Operation{put(0, 0, 10, 0, "a", 0, 2),
			op(1, 20, 30, wInput{Op: wTxn, Key: 0, Key2: 1, Val: "t", Mod: 2, Mod2: 0}, wOutput{Rev: 3, Succeeded: true}),
			get(2, 40, 50, 1, kv("t'", 1, 3, 3, 0), 3)}, porcupine.Ok},
		{"cas succeeding on a stale mod revision", []porcupine.Operation{put(0, 0, 10, 0, "a", 0, 2), put(0, 11, 20, 0, "b", 0, 3),
			op(1, 30, 40, wInput{Op: wTxn, Key: 0, Key2: 1, Val: "t", Mod: 2, Mod2: 0}, wOutput{Rev: 4, Succeeded: true})}, porcupine.Illegal},
		{"put with a revoked lease", []porcupine.Operation{grant(0, 0, 10, 2), revoke(0, 11, 20, 2, false), put(0, 21, 30, 0, "a", 2, 2)}, porcupine.Illegal},
		{"revoke deletes the lease's keys", []porcupine.Operation{grant(0, 0, 10, 2), put(0, 11, 20, 0, "a", 2, 2), revoke(0, 21, 30, 2, false),
			get(1, 31, 40, 0, kv("a", 1, 2, 2, 2), 2)}, porcupine.Illegal},
		{"put with an expired lease", []porcupine.Operation{grant(0, 0, 10, 3), put(0, 11, 20, 0, "a", 3, 2), get(1, 31, 40, 0, wKV{}, 3),
			put(0, 41, 50, 1, "b", 3, 4)}, porcupine.Illegal},
		{"expiry deletes the keys", []porcupine.Operation{grant(0, 0, 10, 3), put(0, 11, 20, 0, "a", 3, 2), get(1, 31, 40, 0, wKV{}, 3),
			op(0, 41, 50, wInput{Op: wPut, Key: 1, Val: "b", Lease: 3}, wOutput{LeaseNotFound: true})}, porcupine.Ok},
		{"a long lease does not expire", []porcupine.Operation{grant(0, 0, 10, 2), put(0, 11, 20, 0, "a", 2, 2), get(1, 31, 40, 0, wKV{}, 3)}, porcupine.Illegal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := porcupine.CheckOperationsTimeout(wideModel(1), tt.ops, 5*time.Second); got != tt.want {
				t.Errorf("check = %s, want %s", got, tt.want)
			}
		})
	}
}
