package rafthttp

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// The paths the transport serves under the member's peer listener.
const (
	// StreamPath receives the long-lived message stream of one peer.
	StreamPath = "/raft/stream"
	// SnapshotPath receives one MsgSnap followed by its payload.
	SnapshotPath = "/raft/snapshot"
)

// Header names, the same as etcd's so that a packet capture reads alike.
const (
	headerClusterID = "X-Etcd-Cluster-ID"
	headerFrom      = "X-Server-From"
	headerTo        = "X-Raft-To"
)

// Response bodies of the rejections. The sender recognises them by status
// code; the bodies are for the humans reading logs and captures.
var (
	// ErrClusterIDMismatch is returned by a peer of another cluster, or
	// reported about one: the two members must never exchange raft messages.
	ErrClusterIDMismatch = errors.New("cluster ID mismatch")
	// ErrMemberRemoved is returned by a peer that knows the sender was
	// removed from the cluster: it must stop, as etcd's member does.
	ErrMemberRemoved = errors.New("the member has been permanently removed from the cluster")
	// errToMismatch means the request reached a member other than the one it
	// was meant for, for example after a peer URL was reused.
	errToMismatch = errors.New("to field mismatch")
)

// formatID writes a member or cluster ID the way etcd's types.ID does: hex.
func formatID(id uint64) string { return strconv.FormatUint(id, 16) }

func parseID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("parse member ID %q: %w", s, err)
	}
	return id, nil
}

// setHeaders stamps a request with who sends it, to whom, in which cluster.
func (t *Transport) setHeaders(h http.Header, to uint64) {
	h.Set(headerClusterID, formatID(t.cfg.ClusterID))
	h.Set(headerFrom, formatID(t.cfg.ID))
	h.Set(headerTo, formatID(to))
}

// checkRequest validates an incoming request's method and headers. On
// failure it has already written the error response and returns ok false.
func (t *Transport) checkRequest(w http.ResponseWriter, r *http.Request) (from uint64, ok bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return 0, false
	}
	w.Header().Set(headerClusterID, formatID(t.cfg.ClusterID))
	remoteFrom := r.Header.Get(headerFrom)
	if gcid := r.Header.Get(headerClusterID); gcid != formatID(t.cfg.ClusterID) {
		t.rejectLog.warn(remoteFrom+"/cluster", "rejected raft request; cluster ID mismatch",
			"remote-peer-id", remoteFrom, "remote-peer-cluster-id", gcid, "local-member-cluster-id", formatID(t.cfg.ClusterID))
		http.Error(w, fmt.Sprintf("%v: local %s, remote %s", ErrClusterIDMismatch, formatID(t.cfg.ClusterID), gcid),
			http.StatusPreconditionFailed)
		return 0, false
	}
	from, err := parseID(remoteFrom)
	if err != nil {
		http.Error(w, "invalid from: "+err.Error(), http.StatusBadRequest)
		return 0, false
	}
	if gto := r.Header.Get(headerTo); gto != formatID(t.cfg.ID) {
		t.rejectLog.warn(remoteFrom+"/to", "rejected raft request; target ID mismatch",
			"remote-peer-id", remoteFrom, "header-to", gto)
		http.Error(w, fmt.Sprintf("%v: local %s, remote asked for %s", errToMismatch, formatID(t.cfg.ID), gto),
			http.StatusPreconditionFailed)
		return 0, false
	}
	if t.cfg.Raft.IsIDRemoved(from) {
		t.rejectLog.warn(remoteFrom+"/removed", "rejected raft request from removed member", "remote-peer-id", remoteFrom)
		http.Error(w, "removed member", http.StatusGone)
		return 0, false
	}
	return from, true
}
