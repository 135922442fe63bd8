package rafthttp

import (
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func TestStreamDeliversEverythingInOrder(t *testing.T) {
	a, b := newNode(t, 1, nodeOptions{}), newNode(t, 2, nodeOptions{})
	connect(a, b)
	warmUp(t, a, b)
	warmUp(t, b, a)

	// Several goroutines send at once in both directions; per sender
	// goroutine, the receiver must see its messages complete and in order.
	const senders, perSender = 4, 1000
	var wg sync.WaitGroup
	for _, pair := range [][2]*node{{a, b}, {b, a}} {
		from, to := pair[0], pair[1]
		for g := range uint64(senders) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range uint64(perSender) {
					m := msgApp(from.id, to.id, i+1, []byte("x"))
					m.Commit = proto.Uint64(g) // tags the sending goroutine
					from.tr.Send([]*raftpb.Message{m})
				}
			}()
		}
	}
	wg.Wait()
	for _, n := range []*node{a, b} {
		n.rec.await(t, 10*time.Second, fmt.Sprintf("%d messages at %d", senders*perSender, n.id), func() bool {
			return len(n.rec.msgs) >= senders*perSender
		})
		next := make([]uint64, senders)
		for _, m := range n.rec.messages() {
			g := m.GetCommit()
			if want := next[g] + 1; m.GetEntries()[0].GetIndex() != want {
				t.Fatalf("node %d: goroutine %d: got index %d, want %d", n.id, g, m.GetEntries()[0].GetIndex(), want)
			}
			next[g]++
		}
		if got := n.rec.count(); got != senders*perSender {
			t.Errorf("node %d received %d messages, want %d", n.id, got, senders*perSender)
		}
		if u := n.obs.count(EventUnreachable); u != 0 {
			t.Errorf("node %d observed %d unreachable messages on a healthy link", n.id, u)
		}
	}
}

func TestLargeMsgAppArrivesIntact(t *testing.T) {
	a, b := newNode(t, 1, nodeOptions{}), newNode(t, 2, nodeOptions{})
	connect(a, b)
	warmUp(t, a, b)

	var sent []*raftpb.Message
	for i, size := range []int{1, 3 << 20, 64 << 10, 8 << 20} {
		data := make([]byte, size)
		rand.Read(data)
		sent = append(sent, msgApp(1, 2, uint64(i+1), data))
	}
	a.tr.Send(sent)
	b.rec.await(t, 10*time.Second, "large messages", func() bool { return len(b.rec.msgs) == len(sent) })
	for i, got := range b.rec.messages() {
		if !proto.Equal(got, sent[i]) {
			t.Errorf("message %d differs after transfer (%d entry bytes)", i, len(sent[i].GetEntries()[0].GetData()))
		}
	}
}

func TestReconnectAfterPeerRestart(t *testing.T) {
	a, b := newNode(t, 1, nodeOptions{}), newNode(t, 2, nodeOptions{})
	connect(a, b)
	warmUp(t, a, b)
	addr := b.srv.Listener.Addr().String()

	b.stop()
	// While b is down, what a sends is lost and raft is told so.
	// Nothing but the next Send tells the sender; poll briefly.
	deadline := time.Now().Add(5 * time.Second)
	for a.obs.count(EventUnreachable) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no message was reported unreachable while the peer was down")
		}
		a.tr.Send([]*raftpb.Message{heartbeat(1, 2, 1)})
		time.Sleep(5 * time.Millisecond)
	}
	a.rec.await(t, 5*time.Second, "ReportUnreachable(2)", func() bool { return a.rec.unreachable[2] > 0 })

	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", addr, err)
	}
	restarted := newNode(t, 2, nodeOptions{listener: l})
	start := time.Now()
	warmUp(t, a, restarted)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("reconnect took %v, want at most the 1s max backoff plus a dial", d)
	}
	a.tr.Send([]*raftpb.Message{heartbeat(1, 2, 7)})
	restarted.rec.await(t, 5*time.Second, "heartbeat after restart", func() bool { return len(restarted.rec.msgs) == 1 })
	if !strings.Contains(a.logs.String(), "peer became inactive") {
		t.Errorf("sender did not log losing the stream; logs:\n%s", a.logs.String())
	}
}

func TestRejectedStreamIsLoggedOnceAndNothingStepped(t *testing.T) {
	tests := []struct {
		name          string
		senderCluster uint64
		removed       bool
		wantLog       string
	}{
		{name: "cluster ID mismatch", senderCluster: 0xbad, wantLog: "cluster ID mismatch: local c1, remote bad"},
		{name: "removed member", removed: true, wantLog: "removed member"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fast := func(tr *Transport) { tr.minBackoff, tr.maxBackoff = 5*time.Millisecond, 10*time.Millisecond }
			a := newNode(t, 1, nodeOptions{cluster: tt.senderCluster, tune: fast})
			b := newNode(t, 2, nodeOptions{})
			b.rec.removed[1] = tt.removed
			a.tr.AddPeer(2, b.srv.URL)

			// Let the sender retry a few times, sending all along.
			deadline := time.Now().Add(5 * time.Second)
			for b.reqs.get() < 5 {
				if time.Now().After(deadline) {
					t.Fatalf("sender made only %d attempts", b.reqs.get())
				}
				a.tr.Send([]*raftpb.Message{heartbeat(1, 2, 1)})
				time.Sleep(5 * time.Millisecond)
			}
			if n := b.rec.count(); n != 0 {
				t.Errorf("receiver stepped %d messages from a rejected sender", n)
			}
			logs := a.logs.String()
			if n := countLines(logs, "peer rejected the raft stream"); n != 1 {
				t.Errorf("sender logged the rejection %d times over %d attempts, want once; logs:\n%s", n, b.reqs.get(), logs)
			}
			if !strings.Contains(logs, tt.wantLog) {
				t.Errorf("sender logs lack %q:\n%s", tt.wantLog, logs)
			}
			a.rec.await(t, 5*time.Second, "ReportUnreachable for the rejected peer", func() bool { return a.rec.unreachable[2] > 0 })
		})
	}
}

func TestHandlerRejectsBadRequests(t *testing.T) {
	rec := newRecorder()
	rec.removed[3] = true
	tr := New(Config{ID: 2, ClusterID: 0xc1, Raft: rec})
	defer tr.Stop()
	h := tr.Handler()

	tests := []struct {
		name       string
		method     string
		path       string
		header     map[string]string
		wantStatus int
		wantBody   string
	}{
		{name: "wrong method", method: http.MethodGet, path: StreamPath, wantStatus: http.StatusMethodNotAllowed},
		{name: "cluster ID mismatch", path: StreamPath, header: map[string]string{headerClusterID: "bad"},
			wantStatus: http.StatusPreconditionFailed, wantBody: "cluster ID mismatch: local c1, remote bad"},
		{name: "cluster ID missing on snapshot", path: SnapshotPath, header: map[string]string{headerClusterID: ""},
			wantStatus: http.StatusPreconditionFailed, wantBody: "cluster ID mismatch"},
		{name: "other target", path: StreamPath, header: map[string]string{headerTo: "5"},
			wantStatus: http.StatusPreconditionFailed, wantBody: "to field mismatch"},
		{name: "removed sender", path: StreamPath, header: map[string]string{headerFrom: "3"},
			wantStatus: http.StatusGone, wantBody: "removed member"},
		{name: "removed sender of a snapshot", path: SnapshotPath, header: map[string]string{headerFrom: "3"},
			wantStatus: http.StatusGone, wantBody: "removed member"},
		{name: "unparsable sender", path: StreamPath, header: map[string]string{headerFrom: "zz"},
			wantStatus: http.StatusBadRequest, wantBody: "invalid from"},
		{name: "snapshot without a message", path: SnapshotPath, wantStatus: http.StatusBadRequest},
		{name: "unknown path", path: "/raft/probe", wantStatus: http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			req := httptest.NewRequest(method, tt.path, strings.NewReader(""))
			req.Header.Set(headerClusterID, "c1")
			req.Header.Set(headerFrom, "1")
			req.Header.Set(headerTo, "2")
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tt.wantStatus {
				t.Errorf("status %d, want %d (body %q)", w.Code, tt.wantStatus, w.Body.String())
			}
			if !strings.Contains(w.Body.String(), tt.wantBody) {
				t.Errorf("body %q lacks %q", w.Body.String(), tt.wantBody)
			}
		})
	}
	if n := rec.count(); n != 0 {
		t.Errorf("rejected requests stepped %d messages", n)
	}
}

func TestUpdatePeerRedialsNewURL(t *testing.T) {
	a, b := newNode(t, 1, nodeOptions{}), newNode(t, 2, nodeOptions{})
	connect(a, b)
	warmUp(t, a, b)

	moved := newNode(t, 2, nodeOptions{})
	a.tr.UpdatePeer(2, moved.srv.URL)
	warmUp(t, a, moved)
	a.tr.Send([]*raftpb.Message{heartbeat(1, 2, 5)})
	moved.rec.await(t, 5*time.Second, "heartbeat at the new URL", func() bool { return len(moved.rec.msgs) == 1 })
	if n := b.rec.count(); n != 0 {
		t.Errorf("old URL still got %d messages after the update", n)
	}
}

func TestUndialablePeerDropsAndReportsUnreachable(t *testing.T) {
	// A listener that accepts connections but never answers keeps the
	// stream in its handshake, so Send's queue fills up.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()

	a := newNode(t, 1, nodeOptions{tune: func(tr *Transport) { tr.queueSize, tr.cfg.DialTimeout = 4, 100*time.Millisecond }})
	a.tr.AddPeer(2, "http://"+l.Addr().String())
	msgs := make([]*raftpb.Message, 10)
	for i := range msgs {
		msgs[i] = msgApp(1, 2, uint64(i+1), nil)
	}
	a.tr.Send(msgs)
	if got := a.obs.count(EventUnreachable); got < 6 {
		t.Errorf("observed %d unreachable messages right after Send, want at least the 6 that did not fit the queue", got)
	}
	a.rec.await(t, 5*time.Second, "ReportUnreachable(2)", func() bool { return a.rec.unreachable[2] > 0 })
	// After the handshake times out, the queued four are dropped too.
	deadline := time.Now().Add(5 * time.Second)
	for a.obs.count(EventUnreachable) < 10 {
		if time.Now().After(deadline) {
			t.Fatalf("observed %d unreachable messages, want 10", a.obs.count(EventUnreachable))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := countLines(a.logs.String(), "sending buffer is full"); n != 1 {
		t.Errorf("logged a full buffer %d times, want once", n)
	}
}

func TestStopIsPromptAndLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		a, b := newNode(t, 1, nodeOptions{}), newNode(t, 2, nodeOptions{})
		connect(a, b)
		warmUp(t, a, b)
		warmUp(t, b, a)
		a.tr.AddPeer(3, "http://127.0.0.1:1") // never answers: a dialling peer
		for i := range 100 {
			a.tr.Send([]*raftpb.Message{msgApp(1, 2, uint64(i+1), []byte("payload")), heartbeat(1, 3, 1)})
		}
		start := time.Now()
		a.tr.Stop()
		b.tr.Stop()
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Errorf("Stop took %v", d)
		}
		a.tr.Stop() // idempotent
		a.tr.Send([]*raftpb.Message{heartbeat(1, 2, 1)})
		a.tr.AddPeer(4, "http://127.0.0.1:1")
		a.stop()
		b.stop()
	}()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after Stop:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ActivePeers counts the peers whose stream is up: none before they are
// dialled, each once it accepts, and one fewer when a peer stops.
func TestActivePeersFollowsTheStreams(t *testing.T) {
	a, b, c := newNode(t, 1, nodeOptions{}), newNode(t, 2, nodeOptions{}), newNode(t, 3, nodeOptions{})
	if n := a.tr.ActivePeers(); n != 0 {
		t.Fatalf("ActivePeers with no peers = %d, want 0", n)
	}
	connect(a, b, c)
	warmUp(t, a, b)
	warmUp(t, a, c)
	if n := a.tr.ActivePeers(); n != 2 {
		t.Fatalf("ActivePeers with both streams up = %d, want 2", n)
	}
	c.stop()
	// The stream's end reaches the sender when the peer closes it.
	deadline := time.Now().Add(5 * time.Second)
	for a.tr.ActivePeers() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("ActivePeers after a peer stopped = %d, want 1; logs:\n%s", a.tr.ActivePeers(), a.logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
