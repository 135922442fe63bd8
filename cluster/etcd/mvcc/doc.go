// Package mvcc is the multi-version key-value store behind a klab etcd
// member: the state machine that raft entries are applied to.
//
// Like etcd's server/v3/storage/mvcc, every change gets a revision. A
// revision has a main part, bumped once per write request (a Put, a
// DeleteRange or a whole Txn that changed something), and a sub part that
// numbers the changes inside that request. Each key remembers when it was
// created (create_revision), when it was last changed (mod_revision), how
// many times it was put since it was created (version) and the lease it is
// attached to. A delete leaves a tombstone, so that a reader at an older
// revision still sees the old value, and a watcher sees a DELETE event.
//
// Unlike etcd, which keeps only a key index in memory and reads values from
// bbolt, klab keeps the whole history since the compaction revision in
// memory: a B-tree of keys, each with its list of versions, plus one log of
// all changes in revision order that watchers replay from. A lab cluster is
// small, and this keeps reads and watches simple and free of disk I/O.
// bbolt is still the source of truth: every change is written, in etcd's own
// schema, into the caller's bbolt transaction, so a restarted member loads
// exactly what it had committed and the db file reads like etcd's:
//
//	bucket "key":   revision bytes (8-byte big-endian main, '_', 8-byte sub,
//	                plus 't' for a tombstone) -> mvccpb.KeyValue
//	bucket "meta":  scheduledCompactRev, finishedCompactRev (revision bytes),
//	                consistent_index, term (8-byte big-endian)
//	bucket "lease": owned by package lease
//
// Determinism: the store is a replicated state machine. Everything that
// changes it (Put, DeleteRange, Txn, Compact, DeleteKeys) depends only on
// the current state and the request, never on the clock or on map order, so
// every member that applies the same entries ends with the same bytes.
//
// Writes happen inside a writable bbolt transaction that the caller opens and
// commits. The in-memory state changes at once; watchers see a revision only
// when the caller calls Publish. The member publishes once the raft entries
// behind a revision are committed — on a quorum's disks — so a watcher never
// reports a change that could still be lost, even before this member's own
// bbolt commit (a member that failed that commit would replay the entries).
package mvcc
