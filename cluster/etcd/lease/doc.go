// Package lease is the lessor of a klab etcd member: it grants leases,
// keeps track of the keys attached to each, and, on the leader, notices
// when a lease has expired.
//
// As in etcd, expiry is decided by the leader alone and revocation is
// replicated: only the leader's lessor (promoted with Promote) tracks
// expiry times, and when it reports a lease in Expired the member proposes a
// LeaseRevoke through raft. Every member then applies that entry with
// Revoke, which deletes the lease's keys in one MVCC revision and then the
// lease itself, in the same bbolt transaction. Followers keep every lease
// alive forever, so a lease never expires on one member but not on
// another. When a member becomes leader it extends every lease by the
// election timeout (Promote's extend), so clients get a chance to renew
// with the new leader before their leases are revoked.
//
// Leases are stored in bbolt bucket "lease" as etcd stores them: the 8-byte
// big-endian lease ID mapped to a leasepb.Lease. Which keys belong to which
// lease is not stored here: every key's KeyValue records its lease, and the
// MVCC store re-attaches them when it loads.
//
// Unlike etcd, klab does not checkpoint remaining TTLs, and does not spread
// out the expiry of many leases after a leader change: a lab has few leases.
package lease
