package mvcc

import (
	"bytes"
	"sort"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// Range serves a RangeRequest from memory, at req.Revision or, when that is
// 0, at the current revision. Count is the number of keys in the range at
// that revision before limit and before the min/max revision filters, as in
// etcd. Errors are rpctypes.ErrGRPCFutureRev and rpctypes.ErrGRPCCompacted.
func (s *Store) Range(req *pb.RangeRequest) (*pb.RangeResponse, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rangeAt(req, s.rev)
}

// rangeAt serves a range in a view whose newest revision is curRev; inside
// a txn that already wrote, that is the txn's own revision. The caller holds mu.
func (s *Store) rangeAt(req *pb.RangeRequest, curRev int64) (*pb.RangeResponse, error) {
	if err := s.checkRangeRev(req.Revision, curRev); err != nil {
		return nil, err
	}
	rev := req.Revision
	if rev <= 0 {
		rev = curRev
	}

	// Without re-sorting or filtering, the index order is the answer and
	// one extra key tells whether there is more; otherwise every key has
	// to be looked at before limit applies.
	collect := -1
	if !req.CountOnly && req.Limit > 0 && isDefaultOrdering(req) && !hasRevisionFilters(req) {
		collect = int(req.Limit) + 1
	}
	if req.CountOnly {
		collect = 0
	}
	var kvs []*mvccpb.KeyValue
	count := int64(0)
	s.ix.visit(req.Key, rangeEnd(req.RangeEnd), func(h *keyHistory) bool {
		e := h.at(rev)
		if e == nil {
			return true
		}
		count++
		if collect < 0 || len(kvs) < collect {
			kvs = append(kvs, copyKV(e.kv))
		}
		return true
	})

	resp := &pb.RangeResponse{Header: &pb.ResponseHeader{Revision: curRev}, Count: count}
	if req.CountOnly {
		return resp, nil
	}
	kvs = filterKVs(kvs, req)
	sortKVs(kvs, req)
	if req.Limit > 0 && len(kvs) > int(req.Limit) {
		kvs = kvs[:req.Limit]
		resp.More = true
	}
	if req.KeysOnly {
		// Values are dropped only now: sorting by value needs them.
		for _, kv := range kvs {
			kv.Value = nil
		}
	}
	resp.Kvs = kvs
	return resp, nil
}

// checkRangeRev reports whether a read at rev is possible in a view whose
// newest revision is curRev. Reading exactly at the compaction revision is
// allowed, as in etcd: compaction keeps each key's version at that revision.
func (s *Store) checkRangeRev(rev, curRev int64) error {
	switch {
	case rev > curRev:
		return rpctypes.ErrGRPCFutureRev
	case rev > 0 && rev < s.compactRev:
		return rpctypes.ErrGRPCCompacted
	}
	return nil
}

// rangeEnd turns a request's range_end into the index's convention: nil for
// a single key, empty for "every key from key on" (range_end "\x00").
func rangeEnd(end []byte) []byte {
	switch {
	case len(end) == 0:
		return nil
	case len(end) == 1 && end[0] == 0:
		return []byte{}
	}
	return end
}

// copyKV returns a copy that a caller may change (the gRPC layer, or
// keys_only) without touching history. Byte slices are shared: nothing
// writes into them.
func copyKV(kv *mvccpb.KeyValue) *mvccpb.KeyValue {
	c := &mvccpb.KeyValue{
		Key:            kv.Key,
		CreateRevision: kv.CreateRevision,
		ModRevision:    kv.ModRevision,
		Version:        kv.Version,
		Value:          kv.Value,
		Lease:          kv.Lease,
	}
	return c
}

func isDefaultOrdering(req *pb.RangeRequest) bool {
	return req.SortOrder == pb.RangeRequest_NONE ||
		(req.SortTarget == pb.RangeRequest_KEY && req.SortOrder == pb.RangeRequest_ASCEND)
}

func hasRevisionFilters(req *pb.RangeRequest) bool {
	return req.MinModRevision != 0 || req.MaxModRevision != 0 ||
		req.MinCreateRevision != 0 || req.MaxCreateRevision != 0
}

// filterKVs applies the min/max mod and create revision filters.
func filterKVs(kvs []*mvccpb.KeyValue, req *pb.RangeRequest) []*mvccpb.KeyValue {
	if !hasRevisionFilters(req) {
		return kvs
	}
	out := kvs[:0]
	for _, kv := range kvs {
		switch {
		case req.MaxModRevision != 0 && kv.ModRevision > req.MaxModRevision:
		case req.MinModRevision != 0 && kv.ModRevision < req.MinModRevision:
		case req.MaxCreateRevision != 0 && kv.CreateRevision > req.MaxCreateRevision:
		case req.MinCreateRevision != 0 && kv.CreateRevision < req.MinCreateRevision:
		default:
			out = append(out, kv)
		}
	}
	return out
}

// sortKVs sorts as etcd does: a sort target other than KEY with order NONE
// means ascending. The sort is stable so that ties keep key order.
func sortKVs(kvs []*mvccpb.KeyValue, req *pb.RangeRequest) {
	order := req.SortOrder
	if req.SortTarget != pb.RangeRequest_KEY && order == pb.RangeRequest_NONE {
		order = pb.RangeRequest_ASCEND
	}
	if order == pb.RangeRequest_NONE ||
		(req.SortTarget == pb.RangeRequest_KEY && order == pb.RangeRequest_ASCEND) {
		return
	}
	var cmp func(a, b *mvccpb.KeyValue) int
	switch req.SortTarget {
	case pb.RangeRequest_KEY:
		cmp = func(a, b *mvccpb.KeyValue) int { return bytes.Compare(a.Key, b.Key) }
	case pb.RangeRequest_VERSION:
		cmp = func(a, b *mvccpb.KeyValue) int { return compareInt64(a.Version, b.Version) }
	case pb.RangeRequest_CREATE:
		cmp = func(a, b *mvccpb.KeyValue) int { return compareInt64(a.CreateRevision, b.CreateRevision) }
	case pb.RangeRequest_MOD:
		cmp = func(a, b *mvccpb.KeyValue) int { return compareInt64(a.ModRevision, b.ModRevision) }
	case pb.RangeRequest_VALUE:
		cmp = func(a, b *mvccpb.KeyValue) int { return bytes.Compare(a.Value, b.Value) }
	default:
		return
	}
	if order == pb.RangeRequest_DESCEND {
		asc := cmp
		cmp = func(a, b *mvccpb.KeyValue) int { return asc(b, a) }
	}
	sort.SliceStable(kvs, func(i, j int) bool { return cmp(kvs[i], kvs[j]) < 0 })
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
