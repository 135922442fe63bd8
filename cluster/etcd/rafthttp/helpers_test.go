package rafthttp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/klab-dev/klab/cluster/etcd/fault"
)

// recorder is an in-memory member: it records what the transport delivers
// and reports, and wakes waiters on every change.
type recorder struct {
	mu          sync.Mutex
	changed     chan struct{}
	msgs        []*raftpb.Message
	arrived     []time.Time // when each of msgs was processed
	snaps       []receivedSnapshot
	unreachable map[uint64]int
	snapReports []raft.SnapshotStatus
	removed     map[uint64]bool
	snapErr     error // returned by ReceiveSnapshot
}

type receivedSnapshot struct {
	m       *raftpb.Message
	payload []byte
}

func newRecorder() *recorder {
	return &recorder{changed: make(chan struct{}), unreachable: map[uint64]int{}, removed: map[uint64]bool{}}
}

// notifyLocked wakes everyone waiting for a change.
func (r *recorder) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *recorder) Process(_ context.Context, m *raftpb.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, m)
	r.arrived = append(r.arrived, time.Now())
	r.notifyLocked()
	return nil
}

func (r *recorder) ReceiveSnapshot(_ context.Context, m *raftpb.Message, payload io.Reader) error {
	b, err := io.ReadAll(payload)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.snapErr != nil {
		return r.snapErr
	}
	r.snaps = append(r.snaps, receivedSnapshot{m: m, payload: b})
	r.notifyLocked()
	return nil
}

func (r *recorder) IsIDRemoved(id uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removed[id]
}

func (r *recorder) ReportUnreachable(id uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unreachable[id]++
	r.notifyLocked()
}

func (r *recorder) ReportSnapshot(_ uint64, status raft.SnapshotStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.snapReports = append(r.snapReports, status)
	r.notifyLocked()
}

// await blocks until cond, evaluated under the lock after every change, is
// true, or fails the test after timeout.
func (r *recorder) await(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		ok, ch := cond(), r.changed
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
	}
}

func (r *recorder) messages() []*raftpb.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*raftpb.Message(nil), r.msgs...)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.msgs)
}

// observer counts Observe events.
type observer struct {
	mu     sync.Mutex
	counts map[string]int
}

func (o *observer) observe(ev string, _ *raftpb.Message) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.counts == nil {
		o.counts = map[string]int{}
	}
	o.counts[ev]++
}

func (o *observer) count(ev string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.counts[ev]
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// names is the member names the test cluster uses for fault lookups.
var names = map[uint64]string{1: "etcd-1", 2: "etcd-2", 3: "etcd-3"}

// node is one member's transport behind a real HTTP server.
type node struct {
	id   uint64
	tr   *Transport
	rec  *recorder
	obs  *observer
	logs *syncBuffer
	srv  *httptest.Server
	reqs *requestCounter
}

type nodeOptions struct {
	cluster   uint64
	faults    *fault.Table
	snapshots SnapshotSource
	listener  net.Listener // to restart on a known address
	tune      func(*Transport)
}

// requestCounter counts the requests that reached the server.
type requestCounter struct {
	mu sync.Mutex
	n  int
}

func (c *requestCounter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func newNode(t testing.TB, id uint64, o nodeOptions) *node {
	t.Helper()
	if o.cluster == 0 {
		o.cluster = 0xc1
	}
	n := &node{id: id, rec: newRecorder(), obs: &observer{}, logs: &syncBuffer{}, reqs: &requestCounter{}}
	n.tr = New(Config{
		ID:          id,
		ClusterID:   o.cluster,
		Name:        names[id],
		PeerName:    func(id uint64) string { return names[id] },
		Faults:      o.faults,
		Raft:        n.rec,
		Snapshots:   o.snapshots,
		Observe:     n.obs.observe,
		Logger:      slog.New(slog.NewTextHandler(n.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		DialTimeout: 500 * time.Millisecond,
	})
	if o.tune != nil {
		o.tune(n.tr)
	}
	mux := http.NewServeMux()
	h := n.tr.Handler()
	mux.Handle("/raft/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.reqs.mu.Lock()
		n.reqs.n++
		n.reqs.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	if o.listener != nil {
		n.srv = &httptest.Server{Listener: o.listener, Config: &http.Server{Handler: mux}}
		n.srv.Start()
	} else {
		n.srv = httptest.NewServer(mux)
	}
	t.Cleanup(n.stop)
	return n
}

// stop stops the transport and then the server, as a member does; safe to
// call twice.
func (n *node) stop() {
	n.tr.Stop()
	n.srv.CloseClientConnections()
	n.srv.Close()
}

// connect makes each node a peer of the others.
func connect(nodes ...*node) {
	for _, a := range nodes {
		for _, b := range nodes {
			if a != b {
				a.tr.AddPeer(b.id, b.srv.URL)
			}
		}
	}
}

func heartbeat(from, to, term uint64) *raftpb.Message {
	return &raftpb.Message{
		Type: raftpb.MessageType_MsgHeartbeat.Enum(),
		From: proto.Uint64(from), To: proto.Uint64(to), Term: proto.Uint64(term),
	}
}

func msgApp(from, to, index uint64, data []byte) *raftpb.Message {
	return &raftpb.Message{
		Type: raftpb.MessageType_MsgApp.Enum(),
		From: proto.Uint64(from), To: proto.Uint64(to), Term: proto.Uint64(2),
		Index: proto.Uint64(index - 1), LogTerm: proto.Uint64(2), Commit: proto.Uint64(index - 1),
		Entries: []*raftpb.Entry{{
			Type: raftpb.EntryType_EntryNormal.Enum(), Term: proto.Uint64(2), Index: proto.Uint64(index), Data: data,
		}},
	}
}

// warmUp sends heartbeats from a to b until one arrives, so that a test
// starts with the stream established.
func warmUp(t testing.TB, a, b *node) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for b.rec.count() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("stream %d→%d never came up; sender logs:\n%s", a.id, b.id, a.logs.String())
		}
		a.tr.Send([]*raftpb.Message{heartbeat(a.id, b.id, 1)})
		// No event tells the sender that its stream is up; poll briefly.
		time.Sleep(5 * time.Millisecond)
	}
	// Order is kept on the link: once a barrier arrives, every warm-up
	// heartbeat queued before it has too.
	a.tr.Send([]*raftpb.Message{heartbeat(a.id, b.id, 99)})
	b.rec.await(t, 5*time.Second, "barrier heartbeat", func() bool {
		return len(b.rec.msgs) > 0 && b.rec.msgs[len(b.rec.msgs)-1].GetTerm() == 99
	})
	b.rec.mu.Lock()
	b.rec.msgs, b.rec.arrived = nil, nil
	b.rec.mu.Unlock()
}

func countLines(logs, substr string) int {
	n := 0
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, substr) {
			n++
		}
	}
	return n
}

var errTest = errors.New("disk full")
