package rafthttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// Handler serves the peers' requests under /raft/; the member mounts it on
// its peer listener's mux at "/raft/".
func (t *Transport) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(StreamPath, t.serveStream)
	mux.HandleFunc(SnapshotPath, t.serveSnapshot)
	return mux
}

// inboundStream is one peer's stream being read by serveStream.
type inboundStream struct {
	from   uint64
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// close makes the handler stop reading and waits until it has returned.
func (in *inboundStream) close() {
	in.cancel()
	<-in.done
}

// track registers a handler with the transport so that Stop can end it and
// wait for it. It returns false once the transport is stopped.
func (t *Transport) track(parent context.Context) (context.Context, context.CancelFunc, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return nil, nil, false
	}
	t.wg.Add(1)
	ctx, cancel := context.WithCancel(parent)
	stop := context.AfterFunc(t.ctx, cancel)
	return ctx, func() { stop(); cancel() }, true
}

// serveStream reads one peer's message stream and steps every message, in
// order, until the stream ends, is replaced by a newer one from the same
// peer, or the transport stops.
func (t *Transport) serveStream(w http.ResponseWriter, r *http.Request) {
	from, ok := t.checkRequest(w, r)
	if !ok {
		return
	}
	ctx, cancel, ok := t.track(r.Context())
	if !ok {
		http.Error(w, "raft transport stopped", http.StatusServiceUnavailable)
		return
	}
	defer t.wg.Done()
	defer cancel()
	in := &inboundStream{from: from, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	defer close(in.done)

	// A peer that restarted dials again while our handler for its old
	// connection may still be blocked on a half-dead socket: the newer
	// stream wins, and the old one is closed so only one steps messages.
	t.mu.Lock()
	old := t.inbound[from]
	t.inbound[from] = in
	t.mu.Unlock()
	if old != nil {
		old.close()
	}
	defer func() {
		t.mu.Lock()
		if t.inbound[from] == in {
			delete(t.inbound, from)
		}
		t.mu.Unlock()
	}()

	rc := http.NewResponseController(w)
	// HTTP/1 handlers normally may not read the body after answering; the
	// stream needs both: the 200 tells the sender it is accepted, the body
	// carries messages for as long as the stream lives.
	if err := rc.EnableFullDuplex(); err != nil {
		http.Error(w, "raft stream needs a full-duplex HTTP/1.1 connection", http.StatusInternalServerError)
		return
	}
	// The member's server may set read/write timeouts for ordinary
	// requests; a stream is idle between heartbeats and lives for hours.
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	t.rejectLog.reset(formatID(from) + "/")
	t.lg.Info("established raft stream from remote peer", "remote-peer-id", formatID(from))

	// A body read does not watch ctx: expire the connection's read deadline
	// to unblock it when the stream is closed.
	unblocked := make(chan struct{})
	handlerDone := make(chan struct{})
	go func() {
		defer close(unblocked)
		select {
		case <-ctx.Done():
			_ = rc.SetReadDeadline(time.Now())
		case <-handlerDone:
		}
	}()
	defer func() { close(handlerDone); <-unblocked }()

	t.readStream(ctx, from, r.Body)
}

// readStream decodes and steps messages until the stream fails.
func (t *Transport) readStream(ctx context.Context, from uint64, body io.Reader) {
	dec := newDecoder(body)
	processFailing := false
	for {
		m, err := dec.decode()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, io.EOF) {
				t.lg.Debug("raft stream closed", "remote-peer-id", formatID(from), "error", err)
			}
			return
		}
		if m.GetTo() != t.cfg.ID {
			t.rejectLog.warn(formatID(from)+"/msgto", "ignored raft message addressed to another member",
				"remote-peer-id", formatID(from), "message-to", formatID(m.GetTo()))
			continue
		}
		if err := t.cfg.Raft.Process(ctx, m); err != nil {
			if ctx.Err() != nil {
				return
			}
			// Log the first failure of a run, not every message.
			if !processFailing {
				t.lg.Warn("failed to process Raft message", "remote-peer-id", formatID(from),
					"type", m.GetType().String(), "error", err)
			}
			processFailing = true
			continue
		}
		processFailing = false
	}
}

// serveSnapshot receives one MsgSnap and its payload and hands both to the
// member. It answers 204 once the member has stored and stepped it, so the
// sender can report the outcome to raft.
func (t *Transport) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	from, ok := t.checkRequest(w, r)
	if !ok {
		return
	}
	ctx, cancel, ok := t.track(r.Context())
	if !ok {
		http.Error(w, "raft transport stopped", http.StatusServiceUnavailable)
		return
	}
	defer t.wg.Done()
	defer cancel()
	// A large snapshot may take longer than the server's request timeout.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})

	dec := newDecoder(r.Body)
	m, err := dec.decode()
	if err != nil {
		t.lg.Warn("failed to read snapshot message", "remote-peer-id", formatID(from), "error", err)
		http.Error(w, "error reading raft message", http.StatusBadRequest)
		return
	}
	if m.GetType() != raftpb.MessageType_MsgSnap {
		http.Error(w, fmt.Sprintf("wrong raft message type %s, want MsgSnap", m.GetType()), http.StatusBadRequest)
		return
	}
	if m.GetTo() != t.cfg.ID {
		http.Error(w, fmt.Sprintf("%v: local %s, message to %s", errToMismatch, formatID(t.cfg.ID), formatID(m.GetTo())),
			http.StatusPreconditionFailed)
		return
	}
	index := m.GetSnapshot().GetMetadata().GetIndex()
	t.lg.Info("receiving database snapshot", "remote-peer-id", formatID(from), "snapshot-index", index)
	if err := t.cfg.Raft.ReceiveSnapshot(ctx, m, dec.rest()); err != nil {
		t.lg.Warn("failed to receive database snapshot", "remote-peer-id", formatID(from),
			"snapshot-index", index, "error", err)
		http.Error(w, fmt.Sprintf("failed to receive snapshot: %v", err), http.StatusInternalServerError)
		return
	}
	t.lg.Info("received and processed database snapshot", "remote-peer-id", formatID(from), "snapshot-index", index)
	w.WriteHeader(http.StatusNoContent)
}
