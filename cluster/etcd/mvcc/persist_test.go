package mvcc

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
)

// dumpAt renders every key-value at rev, or the error, so two stores can be
// compared revision by revision.
func dumpAt(s *Store, rev int64) string {
	resp, err := s.Range(&pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}, Revision: rev})
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	for _, kv := range resp.Kvs {
		fmt.Fprintf(&b, "%s=%s c%d m%d v%d l%d;", kv.Key, kv.Value, kv.CreateRevision, kv.ModRevision, kv.Version, kv.Lease)
	}
	return b.String()
}

func dumpAll(s *Store) []string {
	var out []string
	for rev := int64(1); rev <= s.Rev(); rev++ {
		out = append(out, fmt.Sprintf("@%d %s", rev, dumpAt(s, rev)))
	}
	k, r := s.Stats()
	return append(out, fmt.Sprintf("rev %d compact %d keys %d revisions %d", s.Rev(), s.CompactRev(), k, r))
}

func TestReopenKeepsHistory(t *testing.T) {
	ts := newTestStore(t)
	ts.put("a", "1")
	ts.put("b", "1")
	ts.txn(&pb.TxnRequest{Success: []*pb.RequestOp{putOp("a", "2"), putOp("c", "1")}})
	ts.del("b", "")
	ts.put("b", "2")
	ts.del("a", "z")
	before := dumpAll(ts.s)
	ts.reopen()
	if after := dumpAll(ts.s); !slices.Equal(before, after) {
		t.Errorf("state changed across reopen:\nbefore %q\nafter  %q", before, after)
	}
	// Writes continue from the stored revision.
	if resp := ts.put("d", "1"); resp.Header.Revision != 8 {
		t.Errorf("first revision after reopen = %d, want 8", resp.Header.Revision)
	}
}

func TestBoltLayoutIsEtcds(t *testing.T) {
	ts := newTestStore(t)
	ts.put("a", "1") // 2
	ts.del("a", "")  // 3
	ts.update(func(tx *bolt.Tx) error { return WriteConsistentIndex(tx, 42, 3) })
	err := ts.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("key"))
		put := b.Get([]byte("\x00\x00\x00\x00\x00\x00\x00\x02_\x00\x00\x00\x00\x00\x00\x00\x00"))
		kv := &mvccpb.KeyValue{}
		if err := proto.Unmarshal(put, kv); err != nil {
			return err
		}
		if string(kv.Key) != "a" || string(kv.Value) != "1" || kv.CreateRevision != 2 || kv.ModRevision != 2 || kv.Version != 1 {
			t.Errorf("stored put = %v", kv)
		}
		tomb := b.Get([]byte("\x00\x00\x00\x00\x00\x00\x00\x03_\x00\x00\x00\x00\x00\x00\x00\x00t"))
		kv = &mvccpb.KeyValue{}
		if err := proto.Unmarshal(tomb, kv); err != nil {
			return err
		}
		if !proto.Equal(kv, &mvccpb.KeyValue{Key: []byte("a")}) {
			t.Errorf("stored tombstone = %v, want only the key", kv)
		}
		if idx, term := ReadConsistentIndex(tx); idx != 42 || term != 3 {
			t.Errorf("consistent index = %d/%d, want 42/3", idx, term)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCompaction(t *testing.T) {
	ts := newTestStore(t)
	ts.put("a", "1") // 2
	ts.put("a", "2") // 3
	ts.put("b", "1") // 4
	ts.del("b", "")  // 5
	ts.put("c", "1") // 6
	ts.put("a", "3") // 7
	ts.del("c", "")  // 8
	ts.put("d", "1") // 9
	before := dumpAll(ts.s)

	ts.compact(8)
	if ts.s.CompactRev() != 8 {
		t.Fatalf("compact revision = %d", ts.s.CompactRev())
	}
	// The tombstone of c at exactly 8 stays (as in etcd); a and b lose
	// their old versions; b, deleted before 8, is gone entirely.
	keys, revs := ts.s.Stats()
	if keys != 2 || revs != 3 {
		t.Errorf("stats = %d keys, %d revisions, want 2 keys (a, d) and 3 revisions (a@7, c tombstone@8, d@9)", keys, revs)
	}
	after := dumpAll(ts.s)
	for rev := int64(1); rev <= 9; rev++ {
		got := after[rev-1]
		if rev < 8 {
			if !strings.Contains(got, "compacted") {
				t.Errorf("revision %d still readable: %s", rev, got)
			}
			continue
		}
		if got != before[rev-1] {
			t.Errorf("revision %d changed by compaction:\nbefore %s\nafter  %s", rev, before[rev-1], got)
		}
	}

	tests := []struct {
		name string
		rev  int64
		want string
	}{
		{name: "again at the same revision", rev: 8, want: "compacted"},
		{name: "below", rev: 3, want: "compacted"},
		{name: "future", rev: 10, want: "future"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ts.db.Update(func(tx *bolt.Tx) error {
				_, err := ts.s.Compact(tx, tt.rev)
				return err
			})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}

	// bbolt holds exactly what memory holds.
	var stored []string
	ts.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(keyBucketName).ForEach(func(k, _ []byte) error {
			rev, tomb, _ := bytesToRev(k)
			stored = append(stored, fmt.Sprintf("%d_%d/%v", rev.main, rev.sub, tomb))
			return nil
		})
	})
	if want := []string{"7_0/false", "8_0/true", "9_0/false"}; !slices.Equal(stored, want) {
		t.Errorf("bbolt key bucket = %q, want %q", stored, want)
	}

	ts.reopen()
	if got := dumpAll(ts.s); !slices.Equal(got, after) {
		t.Errorf("compacted state changed across reopen:\nbefore %q\nafter  %q", after, got)
	}
}

func TestCompactionOfEverything(t *testing.T) {
	ts := newTestStore(t)
	ts.put("a", "1") // 2
	ts.del("a", "")  // 3
	ts.put("b", "1") // 4
	ts.del("b", "")  // 5
	ts.compact(5)
	ts.reopen()
	if ts.s.Rev() != 5 || ts.s.CompactRev() != 5 {
		t.Errorf("after reopen revision %d compact %d, want 5 and 5", ts.s.Rev(), ts.s.CompactRev())
	}
	if resp := ts.put("c", "1"); resp.Header.Revision != 6 {
		t.Errorf("next revision = %d, want 6", resp.Header.Revision)
	}
}

func TestRestoreReplacesState(t *testing.T) {
	src := newTestStore(t)
	src.put("a", "1")
	src.put("b", "2")
	src.compact(2)
	src.put("a", "3")
	want := dumpAll(src.s)

	dst := newTestStore(t)
	dst.put("zzz", "old")
	installFrom(dst, src)
	if got := dumpAll(dst.s); !slices.Equal(got, want) {
		t.Errorf("restored state:\n%q\nwant\n%q", got, want)
	}
}

// installFrom copies src's buckets into dst's db, as installing a raft
// snapshot would, and restores dst's store in the same transaction.
func installFrom(dst, src *testStore) {
	dst.t.Helper()
	dst.update(func(tx *bolt.Tx) error {
		return src.db.View(func(stx *bolt.Tx) error {
			for _, name := range [][]byte{keyBucketName, metaBucketName} {
				if err := tx.DeleteBucket(name); err != nil {
					return err
				}
				nb, err := tx.CreateBucket(name)
				if err != nil {
					return err
				}
				if err := stx.Bucket(name).ForEach(func(k, v []byte) error { return nb.Put(k, v) }); err != nil {
					return err
				}
			}
			return dst.s.Restore(tx)
		})
	})
}

func TestRestoreKeepsWatchers(t *testing.T) {
	src := newTestStore(t)
	for i := range 5 {
		src.put("k", fmt.Sprint(i)) // 2..6
	}
	src.compact(4)

	dst := newTestStore(t)
	dst.put("k", "old") // 2
	ws := newStream(t, dst)
	behind := watch(t, ws, &pb.WatchCreateRequest{Key: []byte("k")})                  // next 3
	ahead := watch(t, ws, &pb.WatchCreateRequest{Key: []byte("k"), StartRevision: 5}) // next 5
	installFrom(dst, src)

	var events []string
	compacted := false
	for !compacted || len(events) < 2 {
		resp := recv(t, ws)
		switch resp.WatchId {
		case behind:
			if !resp.Canceled || resp.CompactRevision != 4 {
				t.Fatalf("watcher behind the snapshot got %v, want compacted at 4", resp)
			}
			compacted = true
		case ahead:
			for _, ev := range resp.Events {
				events = append(events, event(ev))
			}
		}
	}
	if want := []string{"PUT k@5=3", "PUT k@6=4"}; !slices.Equal(events, want) {
		t.Errorf("events after restore = %q, want %q", events, want)
	}
}
