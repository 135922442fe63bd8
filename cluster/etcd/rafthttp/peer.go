package rafthttp

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// queued is a message waiting for its peer's stream, stamped with the time
// Send saw it so that a link delay counts from then, not from when the
// sender loop got round to it.
type queued struct {
	m  *raftpb.Message
	at time.Time
}

// errURLChanged ends a stream so that it is redialled at the peer's new URL.
var errURLChanged = errors.New("peer URL changed")

// maxBatchBytes is how much the sender gathers before flushing, so that a
// burst of small messages costs one write and one HTTP chunk.
const maxBatchBytes = 64 * 1024

// peer is the sending half of the link to one member: a queue and the one
// goroutine that owns the stream to it.
type peer struct {
	t  *Transport
	id uint64

	queue chan queued
	ctx   context.Context
	stopf context.CancelFunc
	done  chan struct{}

	mu         sync.Mutex
	url        string
	urlChanged chan struct{}

	// overflowing is set when Send drops a message because the queue is
	// full, so that an overload is logged once, not per message.
	overflowing atomic.Bool

	// active is set while the peer has accepted our stream: what
	// Transport.ActivePeers counts. Written by the run goroutine only.
	active atomic.Bool

	// Owned by the run goroutine.
	lastErr string
	buf     []byte
	batch   []*raftpb.Message
}

func newPeer(t *Transport, id uint64, url string) *peer {
	ctx, cancel := context.WithCancel(t.ctx)
	return &peer{
		t:          t,
		id:         id,
		queue:      make(chan queued, t.queueSize),
		ctx:        ctx,
		stopf:      cancel,
		done:       make(chan struct{}),
		url:        url,
		urlChanged: make(chan struct{}, 1),
	}
}

// enqueue hands m to the sender loop, or drops it if the queue is full.
func (p *peer) enqueue(m *raftpb.Message, now time.Time) {
	select {
	case p.queue <- queued{m: m, at: now}:
	default:
		if !p.overflowing.Swap(true) {
			p.t.lg.Warn("dropped internal Raft message since sending buffer is full (overloaded network)",
				"type", m.GetType().String(), "remote-peer-id", formatID(p.id), "queue-size", cap(p.queue))
		}
		p.t.observe(EventUnreachable, m)
		p.t.reportUnreachable(p.id)
	}
}

func (p *peer) setURL(url string) {
	p.mu.Lock()
	p.url = url
	p.mu.Unlock()
	select {
	case p.urlChanged <- struct{}{}:
	default:
	}
}

func (p *peer) currentURL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.url
}

// stop ends the sender loop and waits for it.
func (p *peer) stop() {
	p.stopf()
	<-p.done
}

// run dials the peer, pumps the queue into the stream until it breaks, and
// redials after a backoff, until the peer is stopped.
func (p *peer) run() {
	defer p.t.wg.Done()
	defer close(p.done)
	backoff := time.Duration(0)
	for {
		s := p.dial(p.currentURL())
		err := p.awaitAccepted(s)
		if err == nil {
			p.becameActive(s.url)
			backoff = 0
			err = p.pump(s)
		}
		s.close()
		if p.ctx.Err() != nil {
			return
		}
		if errors.Is(err, errURLChanged) {
			continue
		}
		p.becameInactive(s.url, err)
		backoff = nextBackoff(backoff, err, p.t.minBackoff, p.t.maxBackoff)
		if !p.discardFor(backoff) {
			return
		}
	}
}

// nextBackoff doubles the wait between failed dials from min up to max. A
// rejection by the peer will not go away soon, so it waits the maximum.
func nextBackoff(cur time.Duration, err error, minB, maxB time.Duration) time.Duration {
	var rej *rejectedError
	if errors.As(err, &rej) {
		return maxB
	}
	if cur < minB {
		return minB
	}
	return min(2*cur, maxB)
}

// awaitAccepted waits until the peer accepts the stream. Messages stay in
// the queue meanwhile: a healthy peer answers within milliseconds.
func (p *peer) awaitAccepted(s *stream) error {
	timer := time.NewTimer(2 * p.t.cfg.DialTimeout)
	defer timer.Stop()
	select {
	case <-s.accepted:
		return nil
	case <-s.done:
		return s.err
	case <-timer.C:
		return errors.New("timed out waiting for the peer to accept the stream")
	case <-p.urlChanged:
		return errURLChanged
	case <-p.ctx.Done():
		return p.ctx.Err()
	}
}

// pump writes queued messages into the stream until it fails.
func (p *peer) pump(s *stream) error {
	for {
		select {
		case q := <-p.queue:
			if err := p.writeBatch(s, q); err != nil {
				return err
			}
		case <-s.done:
			return s.err
		case <-p.urlChanged:
			return errURLChanged
		case <-p.ctx.Done():
			return p.ctx.Err()
		}
	}
}

// writeBatch writes first and whatever else is already queued, up to
// maxBatchBytes, in one write.
func (p *peer) writeBatch(s *stream, first queued) error {
	p.buf, p.batch = p.buf[:0], p.batch[:0]
	q := first
	for {
		if p.admit(s, q) {
			buf, err := appendFrame(p.buf, q.m)
			if err != nil {
				p.t.lg.Error("failed to encode raft message", "remote-peer-id", formatID(p.id), "error", err)
			} else {
				p.buf = buf
				p.batch = append(p.batch, q.m)
			}
		}
		if len(p.buf) >= maxBatchBytes {
			break
		}
		select {
		case q = <-p.queue:
			continue
		default:
		}
		break
	}
	return p.flush(s)
}

// flush writes the gathered frames. If the write fails they are lost, and
// raft is told.
func (p *peer) flush(s *stream) error {
	if len(p.buf) == 0 {
		return nil
	}
	_, err := s.pw.Write(p.buf)
	if err != nil {
		for _, m := range p.batch {
			p.t.observe(EventUnreachable, m)
		}
		p.t.reportUnreachable(p.id)
	} else {
		p.overflowing.Store(false)
	}
	p.buf, p.batch = p.buf[:0], p.batch[:0]
	// Do not hold on to the buffer of one huge MsgApp for the peer's life.
	if cap(p.buf) > 4*maxBatchBytes {
		p.buf = nil
	}
	return err
}

// admit asks the fault table what the network does to q on this link. A
// dropped message is observed and forgotten; a delayed one is held until
// its delivery time, after flushing what was gathered before it, so that
// order on the link is kept.
func (p *peer) admit(s *stream, q queued) bool {
	faults := p.t.cfg.Faults
	if faults == nil {
		return true
	}
	from, to := p.t.cfg.Name, p.t.peerName(p.id)
	ok, delay := faults.Deliver(from, to)
	for {
		if !ok {
			p.t.observe(EventDropped, q.m)
			return false
		}
		wait := time.Until(q.at.Add(delay))
		if wait <= 0 {
			return true
		}
		if err := p.flush(s); err != nil {
			// The stream is broken; q is written (and fails) after the
			// frames it was to follow, which is all order asks.
			return true
		}
		changed := faults.Changed()
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
			return true
		case <-changed:
			// The rule changed while q was in flight: a cut now loses
			// it, a shorter delay delivers it sooner.
			timer.Stop()
			r := faults.Rule(from, to)
			ok, delay = !r.Cut, r.Delay
		case <-p.ctx.Done():
			timer.Stop()
			return false
		}
	}
}

// discardFor waits d before the next dial. Messages queued meanwhile cannot
// be delivered: they are dropped and reported unreachable, since stale
// heartbeats and appends are worthless by the time the peer is back.
func (p *peer) discardFor(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
			return true
		case <-p.urlChanged:
			return true
		case <-p.ctx.Done():
			return false
		case q := <-p.queue:
			if f := p.t.cfg.Faults; f != nil {
				if ok, _ := f.Deliver(p.t.cfg.Name, p.t.peerName(p.id)); !ok {
					p.t.observe(EventDropped, q.m)
					continue
				}
			}
			p.t.observe(EventUnreachable, q.m)
			p.t.reportUnreachable(p.id)
		}
	}
}

func (p *peer) becameActive(url string) {
	if !p.active.Load() {
		p.t.lg.Info("peer became active", "remote-peer-id", formatID(p.id), "remote-peer-url", url)
	}
	p.active.Store(true)
	p.lastErr = ""
}

// becameInactive logs a lost stream or a failed dial once per distinct
// cause, not once per retry.
func (p *peer) becameInactive(url string, err error) {
	msg := err.Error()
	switch {
	case p.active.Load():
		p.t.lg.Warn("peer became inactive (lost stream)", "remote-peer-id", formatID(p.id), "remote-peer-url", url, "error", msg)
	case msg == p.lastErr:
	case errors.As(err, new(*rejectedError)):
		p.t.lg.Error("peer rejected the raft stream", "remote-peer-id", formatID(p.id), "remote-peer-url", url, "error", msg)
	default:
		p.t.lg.Warn("failed to connect to peer", "remote-peer-id", formatID(p.id), "remote-peer-url", url, "error", msg)
	}
	p.active.Store(false)
	p.lastErr = msg
}
