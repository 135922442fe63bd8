// Package etcd is klab's etcd member: a key-value store replicated with Raft,
// speaking the etcd v3 gRPC API so that the real etcdctl and clientv3 use it
// unchanged.
//
// A member is four parts behind small interfaces, as in etcd itself:
//
//   - the raft node (go.etcd.io/raft/v3) decides the order of every change.
//     Member.run is its loop, in the shape the library's doc.go prescribes:
//     for each Ready, persist the hard state and the new entries, send the
//     messages, apply the committed entries, then Advance.
//   - storage is one bbolt file, member.db. It holds the raft log, hard state
//     and snapshot metadata (package raftlog) next to the key-value state in
//     etcd's own backend schema (package mvcc). Each Ready is written in one
//     bbolt transaction, so the applied index always moves atomically with
//     the changes it produced: a restarted member never applies an entry
//     twice and never misses one.
//   - the state machine (apply.go, package mvcc, package lease) turns a
//     committed request into a new revision of the store. It is
//     deterministic: the same entries give the same state on every member.
//     Lease expiry, the one decision that depends on time, is taken by the
//     leader and enters the log as a LeaseRevoke request.
//   - the transport (package rafthttp) carries raft messages between members
//     over HTTP, and consults the fault table (package fault) on the way, so
//     that a lab can drop, delay or cut links between members.
//
// Writes are proposed to raft and acknowledged only after they are applied.
// Linearizable reads use raft's ReadIndex: the member asks the leader for its
// commit index, the leader confirms it is still leader with a round of
// heartbeats, and the read is served once the member has applied that index.
// Serializable reads answer from the member's own state at once.
//
// Snapshots work as in etcd: the raft snapshot records only metadata, since
// the key-value state is already on disk; when a follower is too far behind
// for the log, the leader streams it a copy of its current state. The same
// copy, followed by its SHA-256, is what etcdctl snapshot save receives.
//
// Space is bounded as in etcd: a write that would take member.db past
// QuotaBackendBytes (2 GiB unless configured) is refused with "etcdserver:
// mvcc: database space exceeded" and raises the NOSPACE alarm, an entry in
// the log that caps writes on every member until it is disarmed; reads,
// deletes and compaction go on, and Defragment gives the freed pages back
// (quota.go, alarm.go, defrag.go). A member whose disk refuses a write
// stops with an error that says so; what it acknowledged is in its log
// and is applied again when it restarts.
//
// Each member also serves, on its peer port, the debug endpoints the klab UI
// draws from: /debug/klab/status (its raft view), /debug/klab/events (every
// raft message sent and received, role changes and elections, as
// newline-delimited JSON), /debug/klab/requests (every client request it
// served: method, keys, outcome, and whether a klab component or a person's
// client such as etcdctl made it) and /debug/klab/clock (slow down, pause
// or step the raft clock, so that an election can be watched tick by tick).
package etcd
