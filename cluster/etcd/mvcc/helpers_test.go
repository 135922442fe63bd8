package mvcc

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// testStore is a store on a real bbolt file, with helpers that write in
// their own committed transaction and publish, as the member does per Ready.
type testStore struct {
	t    *testing.T
	path string
	db   *bolt.DB
	s    *Store
}

func newTestStore(t *testing.T) *testStore {
	t.Helper()
	ts := &testStore{t: t, path: filepath.Join(t.TempDir(), "db")}
	ts.open()
	t.Cleanup(func() { ts.db.Close() })
	return ts
}

// open opens the db file and loads a store from it.
func (ts *testStore) open() {
	ts.t.Helper()
	// NoSync: the tests check logic, not durability, and fsyncs are slow.
	db, err := bolt.Open(ts.path, 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		ts.t.Fatalf("open bbolt: %v", err)
	}
	ts.db = db
	ts.update(func(tx *bolt.Tx) error {
		s, err := Open(tx, nil)
		ts.s = s
		return err
	})
}

// reopen closes the db and loads a new store from the file.
func (ts *testStore) reopen() {
	ts.t.Helper()
	if err := ts.db.Close(); err != nil {
		ts.t.Fatalf("close bbolt: %v", err)
	}
	ts.open()
}

// update runs f in a committed write transaction, then publishes.
func (ts *testStore) update(f func(tx *bolt.Tx) error) {
	ts.t.Helper()
	if err := ts.db.Update(f); err != nil {
		ts.t.Fatalf("update: %v", err)
	}
	if ts.s != nil {
		ts.s.Publish()
	}
}

func (ts *testStore) put(key, value string) *pb.PutResponse {
	ts.t.Helper()
	return ts.putReq(&pb.PutRequest{Key: []byte(key), Value: []byte(value)})
}

func (ts *testStore) putReq(req *pb.PutRequest) *pb.PutResponse {
	ts.t.Helper()
	var resp *pb.PutResponse
	ts.update(func(tx *bolt.Tx) (err error) {
		resp, err = ts.s.Put(tx, req)
		return err
	})
	return resp
}

func (ts *testStore) del(key, end string) *pb.DeleteRangeResponse {
	ts.t.Helper()
	var resp *pb.DeleteRangeResponse
	ts.update(func(tx *bolt.Tx) (err error) {
		resp, err = ts.s.DeleteRange(tx, &pb.DeleteRangeRequest{Key: []byte(key), RangeEnd: bytesOrNil(end), PrevKv: true})
		return err
	})
	return resp
}

func (ts *testStore) txn(req *pb.TxnRequest) *pb.TxnResponse {
	ts.t.Helper()
	var resp *pb.TxnResponse
	ts.update(func(tx *bolt.Tx) (err error) {
		resp, err = ts.s.Txn(tx, req)
		return err
	})
	return resp
}

func (ts *testStore) compact(rev int64) {
	ts.t.Helper()
	ts.update(func(tx *bolt.Tx) error {
		_, err := ts.s.Compact(tx, rev)
		return err
	})
}

func (ts *testStore) rangeReq(req *pb.RangeRequest) *pb.RangeResponse {
	ts.t.Helper()
	resp, err := ts.s.Range(req)
	if err != nil {
		ts.t.Fatalf("range %q: %v", req.Key, err)
	}
	return resp
}

// get returns the key's KeyValue at rev (0 = current), or nil.
func (ts *testStore) get(key string, rev int64) *mvccpb.KeyValue {
	ts.t.Helper()
	resp := ts.rangeReq(&pb.RangeRequest{Key: []byte(key), Revision: rev})
	if len(resp.Kvs) == 0 {
		return nil
	}
	return resp.Kvs[0]
}

func bytesOrNil(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// keysOf lists the keys of kvs as strings.
func keysOf(kvs []*mvccpb.KeyValue) []string {
	out := make([]string, len(kvs))
	for i, kv := range kvs {
		out[i] = string(kv.Key)
	}
	return out
}

func putOp(key, value string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(key), Value: []byte(value)}}}
}

func delOp(key, end string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte(key), RangeEnd: bytesOrNil(end)}}}
}

func rangeOp(key, end string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte(key), RangeEnd: bytesOrNil(end)}}}
}

func txnOp(req *pb.TxnRequest) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: req}}
}
