package mvcc

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// The checks below are the ones etcd's gRPC KV service makes before it
// proposes a request (server/v3/etcdserver/api/v3rpc/key.go), with the same
// errors, so the member can reject a bad request without a raft round.

// ValidateRange checks a RangeRequest: a key is required and the sort
// options must be known.
func ValidateRange(req *pb.RangeRequest) error {
	if len(req.Key) == 0 {
		return rpctypes.ErrGRPCEmptyKey
	}
	if _, ok := pb.RangeRequest_SortOrder_name[int32(req.SortOrder)]; !ok {
		return rpctypes.ErrGRPCInvalidSortOption
	}
	if _, ok := pb.RangeRequest_SortTarget_name[int32(req.SortTarget)]; !ok {
		return rpctypes.ErrGRPCInvalidSortOption
	}
	return nil
}

// ValidatePut checks a PutRequest: a key is required, and ignore_value and
// ignore_lease exclude giving a value or a lease.
func ValidatePut(req *pb.PutRequest) error {
	if len(req.Key) == 0 {
		return rpctypes.ErrGRPCEmptyKey
	}
	if req.IgnoreValue && len(req.Value) != 0 {
		return rpctypes.ErrGRPCValueProvided
	}
	if req.IgnoreLease && req.Lease != 0 {
		return rpctypes.ErrGRPCLeaseProvided
	}
	return nil
}

// ValidateDeleteRange checks a DeleteRangeRequest: a key is required.
func ValidateDeleteRange(req *pb.DeleteRangeRequest) error {
	if len(req.Key) == 0 {
		return rpctypes.ErrGRPCEmptyKey
	}
	return nil
}

// ValidateTxn checks a TxnRequest: at most maxOps compares or operations
// per branch (ErrGRPCTooManyOps), every operation valid, and no key put
// twice or put and deleted in the same txn (ErrGRPCDuplicateKey).
func ValidateTxn(req *pb.TxnRequest, maxOps int) error {
	if err := checkTxnRequest(req, maxOps); err != nil {
		return err
	}
	// Overlaps are checked after the cheap checks, as etcd does, to avoid a
	// quadratic walk over a request that is rejected anyway.
	if _, _, err := checkIntervals(req.Success); err != nil {
		return err
	}
	if _, _, err := checkIntervals(req.Failure); err != nil {
		return err
	}
	return nil
}

func checkTxnRequest(req *pb.TxnRequest, maxOps int) error {
	opc := max(len(req.Compare), len(req.Success), len(req.Failure))
	if opc > maxOps {
		return rpctypes.ErrGRPCTooManyOps
	}
	for _, c := range req.Compare {
		if len(c.Key) == 0 {
			return rpctypes.ErrGRPCEmptyKey
		}
	}
	for _, ops := range [][]*pb.RequestOp{req.Success, req.Failure} {
		for _, op := range ops {
			if err := checkRequestOp(op, maxOps-opc); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkRequestOp(op *pb.RequestOp, maxOps int) error {
	switch r := op.Request.(type) {
	case *pb.RequestOp_RequestRange:
		return ValidateRange(r.RequestRange)
	case *pb.RequestOp_RequestPut:
		return ValidatePut(r.RequestPut)
	case *pb.RequestOp_RequestDeleteRange:
		return ValidateDeleteRange(r.RequestDeleteRange)
	case *pb.RequestOp_RequestTxn:
		return checkTxnRequest(r.RequestTxn, maxOps)
	default:
		// An empty operation: etcd answers with this error too.
		return rpctypes.ErrGRPCKeyNotFound
	}
}

// interval is a deleted key range [begin, end); an empty end means no
// upper bound, as in etcd's adt.StringAffineInterval.
type interval struct{ begin, end string }

// containsKey reports whether the point interval [key, key+"\x00")
// intersects iv. Like etcd, a delete with range_end "\x00" is taken
// literally as the interval [key, "\x00"), which holds no key, so such a
// "from key" delete never conflicts with a put.
func (iv interval) containsKey(key string) bool {
	return affineLess(iv.begin, key+"\x00") && affineLess(key, iv.end)
}

// affineLess compares strings where "" is greater than everything.
func affineLess(a, b string) bool {
	switch {
	case a == "":
		return false
	case b == "":
		return true
	}
	return a < b
}

func intersectsAny(dels []interval, key string) bool {
	for _, iv := range dels {
		if iv.containsKey(key) {
			return true
		}
	}
	return false
}

// checkIntervals mirrors etcd's check for overlapping puts and deletes in
// one list of operations and, recursively, in the nested txns: a key may be
// put only once, except once in each of a nested txn's two exclusive
// branches, and may not be both put and deleted.
func checkIntervals(ops []*pb.RequestOp) (map[string]struct{}, []interval, error) {
	var dels []interval
	for _, op := range ops {
		d := op.GetRequestDeleteRange()
		if d == nil {
			continue
		}
		if len(d.RangeEnd) != 0 {
			dels = append(dels, interval{string(d.Key), string(d.RangeEnd)})
		} else {
			dels = append(dels, interval{string(d.Key), string(d.Key) + "\x00"})
		}
	}

	puts := make(map[string]struct{})
	for _, op := range ops {
		t := op.GetRequestTxn()
		if t == nil {
			continue
		}
		putsThen, delsThen, err := checkIntervals(t.Success)
		if err != nil {
			return nil, nil, err
		}
		putsElse, delsElse, err := checkIntervals(t.Failure)
		if err != nil {
			return nil, nil, err
		}
		for k := range putsThen {
			if _, ok := puts[k]; ok || intersectsAny(dels, k) {
				return nil, nil, rpctypes.ErrGRPCDuplicateKey
			}
			puts[k] = struct{}{}
		}
		for k := range putsElse {
			if _, ok := puts[k]; ok {
				if _, fromThen := putsThen[k]; !fromThen {
					return nil, nil, rpctypes.ErrGRPCDuplicateKey
				}
			}
			if intersectsAny(dels, k) {
				return nil, nil, rpctypes.ErrGRPCDuplicateKey
			}
			puts[k] = struct{}{}
		}
		dels = append(dels, delsThen...)
		dels = append(dels, delsElse...)
	}

	for _, op := range ops {
		p := op.GetRequestPut()
		if p == nil {
			continue
		}
		k := string(p.Key)
		if _, ok := puts[k]; ok || intersectsAny(dels, k) {
			return nil, nil, rpctypes.ErrGRPCDuplicateKey
		}
		puts[k] = struct{}{}
	}
	return puts, dels, nil
}
