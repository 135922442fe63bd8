package mvcc

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Bucket and key names, as in etcd's server/v3/storage/schema, so that a klab
// db file has the layout of an etcd one.
var (
	keyBucketName  = []byte("key")
	metaBucketName = []byte("meta")

	scheduledCompactKeyName = []byte("scheduledCompactRev")
	finishedCompactKeyName  = []byte("finishedCompactRev")
	consistentIndexKeyName  = []byte("consistent_index")
	termKeyName             = []byte("term")
)

const (
	// revBytesLen is the length of an encoded revision: 8 bytes of main
	// revision, a '_' separator, 8 bytes of sub revision, all big-endian so
	// that bbolt's byte order is revision order.
	revBytesLen = 8 + 1 + 8
	// markTombstone is appended to the revision bytes of a deletion.
	markTombstone byte = 't'
)

// revision identifies one change: main is the store revision of the request
// that made it, sub its position inside that request.
type revision struct {
	main, sub int64
}

// less orders revisions as bbolt orders their encodings.
func (a revision) less(b revision) bool {
	if a.main != b.main {
		return a.main < b.main
	}
	return a.sub < b.sub
}

// revToBytes encodes a revision as etcd does, with the tombstone mark if asked.
func revToBytes(rev revision, tombstone bool) []byte {
	b := make([]byte, revBytesLen, revBytesLen+1)
	binary.BigEndian.PutUint64(b, uint64(rev.main))
	b[8] = '_'
	binary.BigEndian.PutUint64(b[9:], uint64(rev.sub))
	if tombstone {
		b = append(b, markTombstone)
	}
	return b
}

// bytesToRev decodes revision bytes and reports whether they mark a tombstone.
func bytesToRev(b []byte) (revision, bool, error) {
	if len(b) != revBytesLen && len(b) != revBytesLen+1 {
		return revision{}, false, fmt.Errorf("invalid revision length %d", len(b))
	}
	if b[8] != '_' {
		return revision{}, false, fmt.Errorf("invalid revision separator %q", b[8])
	}
	rev := revision{
		main: int64(binary.BigEndian.Uint64(b[0:8])),
		sub:  int64(binary.BigEndian.Uint64(b[9:17])),
	}
	if rev.main < 0 || rev.sub < 0 {
		return revision{}, false, fmt.Errorf("negative revision %d_%d", rev.main, rev.sub)
	}
	return rev, len(b) == revBytesLen+1 && b[revBytesLen] == markTombstone, nil
}

// WriteConsistentIndex records the raft index and term of the last applied
// entry in the meta bucket. The member calls it in the same bbolt
// transaction as the changes of that entry, so after a crash it knows
// exactly which entries are already in the store and never applies one
// twice. Index 0 is not written, as in etcd: it means "not known yet".
func WriteConsistentIndex(tx *bolt.Tx, index, term uint64) error {
	if index == 0 {
		return nil
	}
	meta, err := tx.CreateBucketIfNotExists(metaBucketName)
	if err != nil {
		return fmt.Errorf("create meta bucket: %w", err)
	}
	if err := meta.Put(consistentIndexKeyName, uint64Bytes(index)); err != nil {
		return fmt.Errorf("write consistent index: %w", err)
	}
	if term > 0 {
		if err := meta.Put(termKeyName, uint64Bytes(term)); err != nil {
			return fmt.Errorf("write term: %w", err)
		}
	}
	return nil
}

// ReadConsistentIndex returns the raft index and term last written by
// WriteConsistentIndex, or zeros for a new db.
func ReadConsistentIndex(tx *bolt.Tx) (index, term uint64) {
	meta := tx.Bucket(metaBucketName)
	if meta == nil {
		return 0, 0
	}
	if v := meta.Get(consistentIndexKeyName); len(v) == 8 {
		index = binary.BigEndian.Uint64(v)
	}
	if v := meta.Get(termKeyName); len(v) == 8 {
		term = binary.BigEndian.Uint64(v)
	}
	return index, term
}

func uint64Bytes(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

// readCompactRevs returns the scheduled and finished compaction revisions.
func readCompactRevs(meta *bolt.Bucket) (scheduled, finished int64, err error) {
	if meta == nil {
		return 0, 0, nil
	}
	read := func(name []byte) (int64, error) {
		v := meta.Get(name)
		if v == nil {
			return 0, nil
		}
		rev, _, err := bytesToRev(v)
		if err != nil {
			return 0, fmt.Errorf("decode %s: %w", name, err)
		}
		return rev.main, nil
	}
	if scheduled, err = read(scheduledCompactKeyName); err != nil {
		return 0, 0, err
	}
	if finished, err = read(finishedCompactKeyName); err != nil {
		return 0, 0, err
	}
	return scheduled, finished, nil
}
