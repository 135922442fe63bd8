package etcd_test

// The sequential specification the linearizability test checks histories
// against: a key-value register per key, with get, put, and two kinds of
// compare-and-swap, partitioned by key so that porcupine checks each key's
// history on its own.

import (
	"fmt"
	"hash/fnv"
	"sort"

	"github.com/anishathalye/porcupine"
)

// kvOpKind is what one client operation does.
type kvOpKind int

const (
	opGet kvOpKind = iota
	opPut
	// opCASValue is Txn(If(Value(key) == expect)).Then(Put(key, value)).
	opCASValue
	// opCASVersion is Txn(If(Version(key) == expectVersion)).Then(Put(key, value)).
	opCASVersion
)

// kvInput is one operation as a client invoked it.
type kvInput struct {
	Op            kvOpKind
	Key           string
	Value         string // put and CAS: the new value (unique per operation)
	Expect        string // opCASValue
	ExpectVersion int64  // opCASVersion
}

// kvOutput is what the client saw. Unknown marks a write whose outcome the
// client cannot know (an error or a timeout after it was sent): it may or
// may not have taken effect. Such operations are recorded with an infinite
// return time, so that the checker may place them anywhere after their call,
// including after everything else (which is the same as never).
type kvOutput struct {
	Value     string // get: "" when the key does not exist
	Version   int64  // get: 0 when the key does not exist
	Succeeded bool   // CAS: whether the compare held
	Unknown   bool
}

// kvState is one key's register: its value and etcd's per-key version
// (number of writes since creation; 0 means the key does not exist).
type kvState struct {
	Value   string
	Version int64
}

// kvStep is the specification of one operation on one key's state.
func kvStep(s kvState, in kvInput, out kvOutput) (bool, kvState) {
	written := kvState{Value: in.Value, Version: s.Version + 1}
	switch in.Op {
	case opGet:
		return out.Value == s.Value && out.Version == s.Version, s
	case opPut:
		return true, written
	case opCASValue, opCASVersion:
		var holds bool
		if in.Op == opCASValue {
			// etcd fails a value compare on a missing key, whatever value
			// it is compared with.
			holds = s.Version > 0 && s.Value == in.Expect
		} else {
			holds = s.Version == in.ExpectVersion
		}
		switch {
		case out.Unknown && holds:
			return true, written
		case out.Unknown:
			return true, s
		case out.Succeeded != holds:
			return false, s
		case holds:
			return true, written
		default:
			return true, s
		}
	}
	return false, s
}

// kvModel is the porcupine model: one register per key.
var kvModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(kvInput).Key
			byKey[k] = append(byKey[k], op)
		}
		keys := make([]string, 0, len(byKey))
		for k := range byKey {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() interface{} { return kvState{} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		return kvStep(state.(kvState), input.(kvInput), output.(kvOutput))
	},
	Equal: func(a, b interface{}) bool { return a.(kvState) == b.(kvState) },
	Hash: func(state interface{}) uint64 {
		s := state.(kvState)
		h := fnv.New64a()
		fmt.Fprintf(h, "%d/%s", s.Version, s.Value)
		return h.Sum64()
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(kvInput), output.(kvOutput)
		res := ""
		switch {
		case out.Unknown:
			res = " -> unknown"
		case in.Op == opGet:
			res = fmt.Sprintf(" -> %q v%d", out.Value, out.Version)
		case in.Op != opPut:
			res = fmt.Sprintf(" -> %v", out.Succeeded)
		}
		switch in.Op {
		case opGet:
			return fmt.Sprintf("get(%s)%s", in.Key, res)
		case opPut:
			return fmt.Sprintf("put(%s, %s)%s", in.Key, in.Value, res)
		case opCASValue:
			return fmt.Sprintf("cas(%s, value==%q, %s)%s", in.Key, in.Expect, in.Value, res)
		default:
			return fmt.Sprintf("cas(%s, version==%d, %s)%s", in.Key, in.ExpectVersion, in.Value, res)
		}
	},
	DescribeState: func(state interface{}) string {
		s := state.(kvState)
		if s.Version == 0 {
			return "<absent>"
		}
		return fmt.Sprintf("%q v%d", s.Value, s.Version)
	},
}
