// Package rafthttp carries raft messages between klab's etcd members over
// HTTP/1.1, in the manner of etcd's own rafthttp package.
//
// Each member keeps, for every peer, one long-lived POST /raft/stream request
// whose body never ends: the sender writes length-prefixed, proto-marshalled
// raftpb.Message frames into it as raft produces them, flushing once per
// batch, and the receiving handler decodes and steps them in order. One
// stream per direction keeps per-peer order and avoids a round trip per
// message, which is what raft needs for 100 ms heartbeats and pipelined
// MsgApp. A broken stream is redialled after a short backoff; messages that
// cannot be written meanwhile are dropped and reported to raft as
// unreachable, so that raft pauses probing the peer instead of filling
// buffers. A snapshot is too large for the stream and is sent on its own
// POST /raft/snapshot: the MsgSnap frame followed by the snapshot payload.
//
// Every request names the sender's cluster and member and the target member
// in headers (X-Etcd-Cluster-ID, X-Server-From, X-Raft-To, as etcd does). A
// receiver refuses a request from another cluster or for another member with
// 412 Precondition Failed, and one from a removed member with 410 Gone.
//
// The transport is also where klab emulates a faulty network: before writing
// a message to a peer, the sender consults the fault table for its directed
// link and drops the message silently, or holds it back for the link's
// delay, exactly as a lossy or slow network would. Streams stay open while a
// link is cut, so healing it resumes delivery at once. Faults are applied on
// the sending side only, so that a drop rate is applied once per message.
package rafthttp
