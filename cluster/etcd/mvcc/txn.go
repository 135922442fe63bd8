package mvcc

import (
	"bytes"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// Txn runs a transaction as etcd does: every compare, nested ones included,
// is evaluated first against the state before the txn; the chosen
// operations are then checked (range revisions, leases, ignore_value and
// ignore_lease) and only then executed, all changes at one revision with
// sub revisions 0, 1, 2... Reads inside the txn see its earlier writes. A
// txn that changes nothing keeps the revision. tx may be nil for a txn
// without writes.
func (s *Store) Txn(tx *bolt.Tx, req *pb.TxnRequest) (*pb.TxnResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.newWriter(tx)
	path := s.txnPath(req, s.rev)
	if _, err := s.checkTxn(w, req, path); err != nil {
		return nil, err
	}
	resp := &pb.TxnResponse{Header: &pb.ResponseHeader{}}
	if _, err := w.execTxn(req, path, resp); err != nil {
		return nil, err
	}
	w.end()
	resp.Header.Revision = w.headerRev()
	return resp, nil
}

// txnPath evaluates the compares of req and of the nested txns on the
// chosen branches, depth first, in the order etcd lays them out: the
// result for req, then for each nested txn its own path.
func (s *Store) txnPath(req *pb.TxnRequest, rev int64) []bool {
	ok := true
	for _, c := range req.Compare {
		if !s.applyCompare(c, rev) {
			ok = false
			break
		}
	}
	path := []bool{ok}
	for _, op := range branch(req, ok) {
		if nested := op.GetRequestTxn(); nested != nil {
			path = append(path, s.txnPath(nested, rev)...)
		}
	}
	return path
}

func branch(req *pb.TxnRequest, succeeded bool) []*pb.RequestOp {
	if succeeded {
		return req.Success
	}
	return req.Failure
}

// checkTxn runs etcd's pre-execution checks along the path and returns how
// many path entries the nested txns used.
func (s *Store) checkTxn(w *writer, req *pb.TxnRequest, path []bool) (int, error) {
	used := 0
	for _, op := range branch(req, path[0]) {
		switch r := op.Request.(type) {
		case *pb.RequestOp_RequestRange:
			if err := s.checkRangeRev(r.RequestRange.Revision, s.rev); err != nil {
				return 0, err
			}
		case *pb.RequestOp_RequestPut:
			if err := s.checkPut(w, r.RequestPut); err != nil {
				return 0, err
			}
		case *pb.RequestOp_RequestTxn:
			n, err := s.checkTxn(w, r.RequestTxn, path[1+used:])
			if err != nil {
				return 0, err
			}
			used += n + 1
		}
	}
	return used, nil
}

// execTxn executes the chosen branch of req into resp and returns how many
// path entries the nested txns used.
func (w *writer) execTxn(req *pb.TxnRequest, path []bool, resp *pb.TxnResponse) (int, error) {
	ops := branch(req, path[0])
	resp.Succeeded = path[0]
	resp.Responses = make([]*pb.ResponseOp, len(ops))
	used := 0
	for i, op := range ops {
		out := &pb.ResponseOp{}
		switch r := op.Request.(type) {
		case *pb.RequestOp_RequestRange:
			rr, err := w.s.rangeAt(r.RequestRange, w.viewRev())
			if err != nil {
				return 0, err
			}
			out.Response = &pb.ResponseOp_ResponseRange{ResponseRange: rr}
		case *pb.RequestOp_RequestPut:
			pr, err := w.execPut(r.RequestPut)
			if err != nil {
				return 0, err
			}
			out.Response = &pb.ResponseOp_ResponsePut{ResponsePut: pr}
		case *pb.RequestOp_RequestDeleteRange:
			dr, err := w.execDeleteRange(r.RequestDeleteRange)
			if err != nil {
				return 0, err
			}
			out.Response = &pb.ResponseOp_ResponseDeleteRange{ResponseDeleteRange: dr}
		case *pb.RequestOp_RequestTxn:
			// A nested txn's header stays empty, as in etcd: only the
			// outermost response carries the revision.
			tr := &pb.TxnResponse{Header: &pb.ResponseHeader{}}
			n, err := w.execTxn(r.RequestTxn, path[1+used:], tr)
			if err != nil {
				return 0, err
			}
			used += n + 1
			out.Response = &pb.ResponseOp_ResponseTxn{ResponseTxn: tr}
		}
		resp.Responses[i] = out
	}
	return used, nil
}

// applyCompare reports whether every key in the compare's range satisfies
// it at rev. A compare on a missing key compares against an empty
// KeyValue (revisions, version and lease 0), except that a value compare
// on a missing key always fails: there is no way to tell a missing value
// from an empty one.
func (s *Store) applyCompare(c *pb.Compare, rev int64) bool {
	found := false
	ok := true
	s.ix.visit(c.Key, rangeEnd(c.RangeEnd), func(h *keyHistory) bool {
		e := h.at(rev)
		if e == nil {
			return true
		}
		found = true
		ok = compareKV(c, e.kv)
		return ok
	})
	if !found {
		if c.Target == pb.Compare_VALUE {
			return false
		}
		return compareKV(c, &mvccpb.KeyValue{})
	}
	return ok
}

func compareKV(c *pb.Compare, kv *mvccpb.KeyValue) bool {
	var result int
	switch c.Target {
	case pb.Compare_VALUE:
		result = bytes.Compare(kv.Value, c.GetValue())
	case pb.Compare_CREATE:
		result = compareInt64(kv.CreateRevision, c.GetCreateRevision())
	case pb.Compare_MOD:
		result = compareInt64(kv.ModRevision, c.GetModRevision())
	case pb.Compare_VERSION:
		result = compareInt64(kv.Version, c.GetVersion())
	case pb.Compare_LEASE:
		result = compareInt64(kv.Lease, c.GetLease())
	}
	switch c.Result {
	case pb.Compare_EQUAL:
		return result == 0
	case pb.Compare_NOT_EQUAL:
		return result != 0
	case pb.Compare_GREATER:
		return result > 0
	case pb.Compare_LESS:
		return result < 0
	}
	return true
}
