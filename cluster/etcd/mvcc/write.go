package mvcc

import (
	"bytes"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/protobuf/proto"
)

// errReadOnlyTx is returned when a write is attempted in a read-only bbolt
// transaction: a programming error in the caller.
var errReadOnlyTx = errors.New("mvcc: write needs a writable bbolt transaction")

// writer applies the changes of one write request (a Put, a DeleteRange, a
// whole Txn or a lease revocation) at one main revision. The caller holds
// the store's write lock from newWriter to end.
type writer struct {
	s  *Store
	tx *bolt.Tx
	// bucket is opened on the first change, so a read-only txn needs no
	// writable bbolt transaction.
	bucket *bolt.Bucket
	// rev is the main revision of this request's changes; the store's
	// revision becomes rev at end if anything changed.
	rev int64
	// changes counts the changes so far: the next change's sub revision.
	changes int64
}

func (s *Store) newWriter(tx *bolt.Tx) *writer {
	return &writer{s: s, tx: tx, rev: s.rev + 1}
}

// viewRev is the revision reads inside the request see: the request's own
// revision once it has changed something, so a txn reads its own writes.
func (w *writer) viewRev() int64 {
	if w.changes > 0 {
		return w.rev
	}
	return w.rev - 1
}

// headerRev is the revision a response reports: the new revision if the
// request changed anything, the unchanged one otherwise.
func (w *writer) headerRev() int64 { return w.viewRev() }

// end makes the request's revision the store's if it changed anything.
func (w *writer) end() {
	if w.changes > 0 {
		w.s.rev = w.rev
	}
}

// live returns the key's current value as the request sees it, or nil.
func (w *writer) live(key []byte) *entry {
	if h := w.s.ix.get(key); h != nil {
		return h.at(w.viewRev())
	}
	return nil
}

// put writes a new version of key.
func (w *writer) put(key, value []byte, leaseID int64) error {
	kv := &mvccpb.KeyValue{
		Key:            bytes.Clone(key),
		Value:          bytes.Clone(value),
		CreateRevision: w.rev,
		ModRevision:    w.rev,
		Version:        1,
		Lease:          leaseID,
	}
	oldLease := int64(0)
	if prev := w.live(key); prev != nil {
		kv.CreateRevision = prev.kv.CreateRevision
		kv.Version = prev.kv.Version + 1
		oldLease = prev.kv.Lease
	}
	if err := w.persist(kv, false); err != nil {
		return err
	}
	if oldLease != leaseID && w.s.lessor != nil {
		if oldLease != 0 {
			w.s.lessor.Detach(oldLease, string(kv.Key))
		}
		if leaseID != 0 {
			w.s.lessor.Attach(leaseID, string(kv.Key))
		}
	}
	return nil
}

// delete writes a tombstone for a live key.
func (w *writer) delete(key []byte) error {
	prev := w.live(key)
	if prev == nil {
		return nil
	}
	// A tombstone stores only the key, as etcd's does.
	if err := w.persist(&mvccpb.KeyValue{Key: bytes.Clone(key)}, true); err != nil {
		return err
	}
	if prev.kv.Lease != 0 && w.s.lessor != nil {
		w.s.lessor.Detach(prev.kv.Lease, string(key))
	}
	return nil
}

// persist stores one change in bbolt and in the index.
func (w *writer) persist(kv *mvccpb.KeyValue, tombstone bool) error {
	if w.bucket == nil {
		if w.tx == nil || !w.tx.Writable() {
			return errReadOnlyTx
		}
		b, err := w.tx.CreateBucketIfNotExists(keyBucketName)
		if err != nil {
			return fmt.Errorf("open key bucket: %w", err)
		}
		w.bucket = b
	}
	rev := revision{main: w.rev, sub: w.changes}
	data, err := proto.Marshal(kv)
	if err != nil {
		return fmt.Errorf("marshal key-value %q: %w", kv.Key, err)
	}
	if err := w.bucket.Put(revToBytes(rev, tombstone), data); err != nil {
		return fmt.Errorf("store revision %d_%d: %w", rev.main, rev.sub, err)
	}
	w.s.ix.add(&entry{rev: rev, tombstone: tombstone, kv: kv})
	w.changes++
	return nil
}

// Put stores req.Value under req.Key at a new revision. It fails with
// rpctypes.ErrGRPCLeaseNotFound if the lease does not exist and with
// rpctypes.ErrGRPCKeyNotFound if ignore_value or ignore_lease is set and the
// key does not exist; nothing is written then. The response's
// Header.Revision is set; the caller fills the rest of the header.
func (s *Store) Put(tx *bolt.Tx, req *pb.PutRequest) (*pb.PutResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.newWriter(tx)
	if err := s.checkPut(w, req); err != nil {
		return nil, err
	}
	resp, err := w.execPut(req)
	if err != nil {
		return nil, err
	}
	w.end()
	return resp, nil
}

// checkPut does etcd's checks that come before any change.
func (s *Store) checkPut(w *writer, req *pb.PutRequest) error {
	if req.Lease != 0 && (s.lessor == nil || !s.lessor.Exists(req.Lease)) {
		return rpctypes.ErrGRPCLeaseNotFound
	}
	if (req.IgnoreValue || req.IgnoreLease) && w.live(req.Key) == nil {
		return rpctypes.ErrGRPCKeyNotFound
	}
	return nil
}

func (w *writer) execPut(req *pb.PutRequest) (*pb.PutResponse, error) {
	resp := &pb.PutResponse{Header: &pb.ResponseHeader{}}
	value, leaseID := req.Value, req.Lease
	prev := w.live(req.Key)
	if prev != nil {
		if req.IgnoreValue {
			value = prev.kv.Value
		}
		if req.IgnoreLease {
			leaseID = prev.kv.Lease
		}
		if req.PrevKv {
			resp.PrevKv = copyKV(prev.kv)
		}
	}
	if err := w.put(req.Key, value, leaseID); err != nil {
		return nil, err
	}
	resp.Header.Revision = w.rev
	return resp, nil
}

// DeleteRange deletes the keys in [key, range_end) at a new revision, or
// changes nothing (and keeps the revision) if none exists.
func (s *Store) DeleteRange(tx *bolt.Tx, req *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.newWriter(tx)
	resp, err := w.execDeleteRange(req)
	if err != nil {
		return nil, err
	}
	w.end()
	return resp, nil
}

func (w *writer) execDeleteRange(req *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	resp := &pb.DeleteRangeResponse{Header: &pb.ResponseHeader{}}
	var live []*entry
	view := w.viewRev()
	w.s.ix.visit(req.Key, rangeEnd(req.RangeEnd), func(h *keyHistory) bool {
		if e := h.at(view); e != nil {
			live = append(live, e)
		}
		return true
	})
	for _, e := range live {
		if req.PrevKv {
			resp.PrevKvs = append(resp.PrevKvs, copyKV(e.kv))
		}
		if err := w.delete(e.kv.Key); err != nil {
			return nil, err
		}
	}
	resp.Deleted = int64(len(live))
	resp.Header.Revision = w.headerRev()
	return resp, nil
}

// DeleteKeys deletes the given keys, those that exist, in one revision. The
// lessor calls it to revoke a lease; it passes the keys sorted so that every
// member writes the same sub revisions.
func (s *Store) DeleteKeys(tx *bolt.Tx, keys [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.newWriter(tx)
	for _, k := range keys {
		if err := w.delete(k); err != nil {
			return err
		}
	}
	w.end()
	return nil
}
