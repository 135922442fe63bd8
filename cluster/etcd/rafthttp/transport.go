package rafthttp

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/klab-dev/klab/cluster/etcd/fault"
	"github.com/klab-dev/klab/cluster/internal/componentbase"
)

// Raft is what the transport delivers to: the member.
//
// The transport calls these methods from its own goroutines, never from the
// goroutine that calls Send, so the member may implement them by stepping
// its raft node even if that waits for the raft loop. Stop waits for calls in
// progress, so they must return once the member stops.
type Raft interface {
	// Process steps one incoming message. Messages of one peer are processed
	// one at a time, in the order the peer sent them.
	Process(ctx context.Context, m *raftpb.Message) error
	// ReceiveSnapshot handles a MsgSnap and its database payload: the member
	// stores the payload, then steps m. An error fails the transfer, and the
	// sending leader is told so.
	ReceiveSnapshot(ctx context.Context, m *raftpb.Message, payload io.Reader) error
	// IsIDRemoved reports whether id was removed from the cluster; requests
	// from it are refused with 410 Gone.
	IsIDRemoved(id uint64) bool
	// ReportUnreachable tells raft that a message to id was lost.
	ReportUnreachable(id uint64)
	// ReportSnapshot tells raft how sending a snapshot to id ended.
	ReportSnapshot(id uint64, status raft.SnapshotStatus)
}

// SnapshotSource opens the payload of an outgoing MsgSnap. It may rewrite m's
// snapshot metadata: the member sends a merged snapshot of its current state,
// as etcd does. The transport closes the payload.
type SnapshotSource func(m *raftpb.Message) (payload io.ReadCloser, err error)

// Events passed to Config.Observe.
const (
	// EventDropped is a message the (emulated) network lost: a cut link or
	// a drop rate.
	EventDropped = "dropped"
	// EventUnreachable is a message that could not be delivered because the
	// peer's stream was down or its send queue was full.
	EventUnreachable = "unreachable"
)

// Config configures a Transport.
type Config struct {
	// ID and ClusterID identify this member and its cluster on every request.
	ID, ClusterID uint64
	// Name is this member's name in the fault table.
	Name string
	// PeerName maps a member ID to its name for fault lookups; it may return
	// "" for an unknown member.
	PeerName func(id uint64) string
	// Faults is the emulated network; nil is a healthy network.
	Faults *fault.Table
	// Raft receives messages and reports.
	Raft Raft
	// Snapshots opens the payload of outgoing snapshots.
	Snapshots SnapshotSource
	// Observe, if set, is told about messages the network drops
	// (EventDropped) or fails to deliver (EventUnreachable), for the UI's
	// message view. It is called from several goroutines, Send's caller
	// included, and must not block.
	Observe func(ev string, m *raftpb.Message)
	// Logger receives the transport's logs; nil discards them.
	Logger *slog.Logger
	// DialTimeout bounds connecting to a peer; 0 means 1s.
	DialTimeout time.Duration
	// WriteTimeout bounds how long messages written to a peer's stream may
	// go unacknowledged by the peer's host before the stream is given up
	// and redialled; 0 means 5s (etcd's ConnWriteTimeout). Without it, a
	// stream over a link that lost its packets (a partitioned container)
	// waits out TCP's growing retransmission intervals after the link
	// heals, tens of seconds with nothing delivered.
	WriteTimeout time.Duration
	// TLS, if set, is what the transport presents and trusts when it dials
	// https:// peers. A stream pays for one handshake when it opens, none
	// per message.
	TLS *tls.Config
}

// Defaults. The queue size is etcd's streamBufSize.
const (
	defaultDialTimeout  = time.Second
	defaultWriteTimeout = 5 * time.Second
	queueSize           = 4096
	minBackoff          = 100 * time.Millisecond
	maxBackoff          = time.Second
)

// Transport sends raft messages to the member's peers and serves theirs.
type Transport struct {
	cfg                    Config
	lg                     *slog.Logger
	client, snapshotClient *http.Client

	// ctx is cancelled by Stop; every goroutine and request derives from it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // goroutines: peers, snapshot sends, reporter, inbound handlers

	// queueSize, minBackoff and maxBackoff are fields so tests can shrink them.
	queueSize              int
	minBackoff, maxBackoff time.Duration

	mu       sync.RWMutex
	stopped  bool
	peers    map[uint64]*peer
	inbound  map[uint64]*inboundStream
	stopOnce sync.Once

	// unreachable coalesces ReportUnreachable calls so that Send never calls
	// into raft and a burst of losses costs raft one report per peer.
	unreachableMu sync.Mutex
	unreachable   map[uint64]struct{}
	reportc       chan struct{}

	rejectLog *onceLog // receiver side: rejected requests
}

// New returns a transport with no peers. It starts one background goroutine;
// call Stop to end it.
func New(cfg Config) *Transport {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = defaultDialTimeout
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = defaultWriteTimeout
	}
	lg := componentbase.Logger(cfg.Logger)
	lg = lg.With("local-member-id", formatID(cfg.ID))
	ctx, cancel := context.WithCancel(context.Background())
	t := &Transport{
		cfg: cfg,
		lg:  lg,
		// Streams and snapshots each hold a connection for their whole
		// life; pooling them would only hand a dead connection to the next
		// dial after a peer restarts. As in etcd, only streams have a
		// write timeout: a snapshot may stall on a busy receiver's disk.
		client:         newClient(cfg, unackedTimeout(cfg.WriteTimeout)),
		snapshotClient: newClient(cfg, nil),
		ctx:            ctx,
		cancel:         cancel,
		queueSize:      queueSize,
		minBackoff:     minBackoff,
		maxBackoff:     maxBackoff,
		peers:          map[uint64]*peer{},
		inbound:        map[uint64]*inboundStream{},
		unreachable:    map[uint64]struct{}{},
		reportc:        make(chan struct{}, 1),
		rejectLog:      newOnceLog(lg, slog.LevelWarn),
	}
	t.wg.Add(1)
	go t.runReporter()
	return t
}

// AddPeer starts sending to the member id at peerURL (like
// "http://127.0.0.1:2380"). Adding a known peer or this member is a no-op.
func (t *Transport) AddPeer(id uint64, peerURL string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped || id == t.cfg.ID || t.peers[id] != nil {
		return
	}
	p := newPeer(t, id, peerURL)
	t.peers[id] = p
	t.wg.Add(1)
	go p.run()
	t.lg.Info("added remote peer", "remote-peer-id", formatID(id), "remote-peer-url", peerURL)
}

// UpdatePeer moves the peer id to a new URL; its stream is redialled there.
func (t *Transport) UpdatePeer(id uint64, peerURL string) {
	t.mu.RLock()
	p := t.peers[id]
	t.mu.RUnlock()
	if p != nil {
		p.setURL(peerURL)
		t.lg.Info("updated remote peer", "remote-peer-id", formatID(id), "remote-peer-url", peerURL)
	}
}

// RemovePeer stops sending to id and closes the stream it sends to us.
func (t *Transport) RemovePeer(id uint64) {
	t.mu.Lock()
	p := t.peers[id]
	delete(t.peers, id)
	in := t.inbound[id]
	t.mu.Unlock()
	if in != nil {
		in.close()
	}
	if p != nil {
		p.stop()
		t.lg.Info("removed remote peer", "remote-peer-id", formatID(id))
	}
}

// ActivePeers counts the peers whose stream from this member is up: they
// accepted it and it has not broken since (etcd's Transporter.ActivePeers).
// The member uses it once at start, to fast-forward its election ticks when
// its peers are there to vote.
func (t *Transport) ActivePeers() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := 0
	for _, p := range t.peers {
		if p.active.Load() {
			n++
		}
	}
	return n
}

// Send queues msgs for their peers and returns at once: it never blocks the
// raft loop. A message whose peer's queue is full is dropped and reported
// unreachable, as etcd does; a message to an unknown peer is dropped.
func (t *Transport) Send(msgs []*raftpb.Message) {
	now := time.Now()
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.stopped {
		return
	}
	for _, m := range msgs {
		to := m.GetTo()
		if to == 0 || to == t.cfg.ID {
			continue
		}
		if m.GetType() == raftpb.MessageType_MsgSnap {
			t.wg.Add(1)
			go t.sendSnapshot(m)
			continue
		}
		p := t.peers[to]
		if p == nil {
			t.lg.Debug("ignored message send request; unknown remote peer target",
				"type", m.GetType().String(), "remote-peer-id", formatID(to))
			continue
		}
		p.enqueue(m, now)
	}
}

// Stop closes every stream, outgoing and incoming, cancels snapshot
// transfers and waits for all of the transport's goroutines. It is
// idempotent; after it Send does nothing and the handler answers 503.
func (t *Transport) Stop() {
	t.stopOnce.Do(func() {
		t.mu.Lock()
		t.stopped = true
		peers := t.peers
		t.peers = map[uint64]*peer{}
		// Copy: the handlers unregister themselves from t.inbound as they end.
		inbound := make([]*inboundStream, 0, len(t.inbound))
		for _, in := range t.inbound {
			inbound = append(inbound, in)
		}
		t.mu.Unlock()
		t.cancel()
		for _, in := range inbound {
			in.close()
		}
		for _, p := range peers {
			p.stop()
		}
		t.wg.Wait()
		t.client.CloseIdleConnections()
		t.snapshotClient.CloseIdleConnections()
	})
}

// newClient is an HTTP client for peer requests, its sockets set up by
// control.
func newClient(cfg Config, control func(network, address string, c syscall.RawConn) error) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:       (&net.Dialer{Timeout: cfg.DialTimeout, Control: control}).DialContext,
		DisableKeepAlives: true,
		TLSClientConfig:   cfg.TLS,
	}}
}

// peerName is the name of member id for fault lookups.
func (t *Transport) peerName(id uint64) string {
	if t.cfg.PeerName == nil {
		return ""
	}
	return t.cfg.PeerName(id)
}

func (t *Transport) observe(ev string, m *raftpb.Message) {
	if t.cfg.Observe != nil {
		t.cfg.Observe(ev, m)
	}
}

// reportUnreachable schedules a ReportUnreachable(id) on the reporter
// goroutine without blocking.
func (t *Transport) reportUnreachable(id uint64) {
	t.unreachableMu.Lock()
	t.unreachable[id] = struct{}{}
	t.unreachableMu.Unlock()
	select {
	case t.reportc <- struct{}{}:
	default: // a wake-up is already pending and will see id
	}
}

func (t *Transport) runReporter() {
	defer t.wg.Done()
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-t.reportc:
		}
		t.unreachableMu.Lock()
		ids := t.unreachable
		t.unreachable = map[uint64]struct{}{}
		t.unreachableMu.Unlock()
		for id := range ids {
			if t.ctx.Err() != nil {
				return
			}
			t.cfg.Raft.ReportUnreachable(id)
		}
	}
}
