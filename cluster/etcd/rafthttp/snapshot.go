package rafthttp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// sendSnapshot posts one MsgSnap and its payload to the peer and reports
// the outcome to raft, which holds the follower in snapshot state until it
// hears Finish or Failure.
func (t *Transport) sendSnapshot(m *raftpb.Message) {
	defer t.wg.Done()
	to := m.GetTo()
	err := t.postSnapshot(m)
	if t.ctx.Err() != nil {
		return // stopping: raft is going away too
	}
	if err != nil {
		t.lg.Warn("failed to send database snapshot", "remote-peer-id", formatID(to), "error", err)
		t.cfg.Raft.ReportUnreachable(to)
		t.cfg.Raft.ReportSnapshot(to, raft.SnapshotFailure)
		return
	}
	t.lg.Info("sent database snapshot", "remote-peer-id", formatID(to),
		"snapshot-index", m.GetSnapshot().GetMetadata().GetIndex())
	t.cfg.Raft.ReportSnapshot(to, raft.SnapshotFinish)
}

// errSnapshotDropped is a snapshot the emulated network lost.
var errSnapshotDropped = errors.New("snapshot dropped by the network")

func (t *Transport) postSnapshot(m *raftpb.Message) error {
	to := m.GetTo()
	t.mu.RLock()
	p := t.peers[to]
	t.mu.RUnlock()
	if p == nil {
		return fmt.Errorf("unknown peer %s", formatID(to))
	}
	if t.cfg.Faults != nil {
		ok, delay := t.cfg.Faults.Deliver(t.cfg.Name, t.peerName(to))
		if !ok {
			t.observe(EventDropped, m)
			return errSnapshotDropped
		}
		if delay > 0 {
			timer := time.NewTimer(delay)
			select {
			case <-timer.C:
			case <-t.ctx.Done():
				timer.Stop()
				return t.ctx.Err()
			}
		}
	}
	if t.cfg.Snapshots == nil {
		return errors.New("no snapshot source configured")
	}
	payload, err := t.cfg.Snapshots(m)
	if err != nil {
		return fmt.Errorf("open snapshot payload: %w", err)
	}
	frame, err := appendFrame(nil, m) // after Snapshots, which may rewrite m
	if err != nil {
		payload.Close()
		return err
	}
	body := &snapshotBody{Reader: io.MultiReader(bytes.NewReader(frame), payload), payload: payload, closed: make(chan struct{})}
	url := p.currentURL() + SnapshotPath
	req, err := http.NewRequestWithContext(t.ctx, http.MethodPost, url, body)
	if err != nil {
		body.Close()
		return fmt.Errorf("make snapshot request to %s: %w", url, err)
	}
	t.setHeaders(req.Header, to)
	req.Header.Set("Content-Type", "application/octet-stream")
	t.lg.Info("sending database snapshot", "remote-peer-id", formatID(to),
		"snapshot-index", m.GetSnapshot().GetMetadata().GetIndex())
	resp, err := t.snapshotClient.Do(req)
	if err != nil {
		t.observe(EventUnreachable, m)
		<-body.closed
		return fmt.Errorf("post snapshot to %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		err = responseError(resp)
	}
	// The client may still be copying the payload if the peer answered
	// early; the payload belongs to the member, so close it only once the
	// client is done with it (it always closes a request body).
	resp.Body.Close()
	<-body.closed
	return err
}

// snapshotBody closes the member's payload when the HTTP client closes the
// request body, and says when that happened.
type snapshotBody struct {
	io.Reader
	payload io.Closer
	once    sync.Once
	closed  chan struct{}
}

func (b *snapshotBody) Close() error {
	var err error
	b.once.Do(func() {
		err = b.payload.Close()
		close(b.closed)
	})
	return err
}
