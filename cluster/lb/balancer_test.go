package lb

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitTimeout bounds every wait for an event; reaching it fails the test.
const waitTimeout = 10 * time.Second

// apiserver is a stand-in for one API server: HTTPS, /readyz answers ok,
// any other path answers the server's name.
type apiserver struct {
	name string
	addr string
	srv  *httptest.Server
}

func startAPIServer(t *testing.T, name, addr string) *apiserver {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			io.WriteString(w, "ok")
			return
		}
		io.WriteString(w, name)
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.StartTLS()
	a := &apiserver{name: name, addr: ln.Addr().String(), srv: srv}
	t.Cleanup(a.stop)
	return a
}

func (a *apiserver) stop() { a.srv.Close() }

// caPEM returns the certificate every httptest TLS server uses, as PEM.
func caPEM(a *apiserver) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.srv.Certificate().Raw})
}

// healthLog keeps the latest health each backend was reported in, so a
// test can wait for a state without sleeping and without losing reports
// about other backends while it waits.
type healthLog struct {
	mu      sync.Mutex
	healthy map[string]bool // absent: not reported yet, which means healthy
	changed chan struct{}   // closed and replaced on every report
}

func newHealthLog() *healthLog {
	return &healthLog{healthy: make(map[string]bool), changed: make(chan struct{})}
}

func (h *healthLog) record(s BackendStatus) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.healthy[s.Backend] = s.Healthy
	close(h.changed)
	h.changed = make(chan struct{})
}

// wait returns once backend was last reported with the given health.
func (h *healthLog) wait(t *testing.T, backend string, healthy bool) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		h.mu.Lock()
		got, reported := h.healthy[backend]
		changed := h.changed
		h.mu.Unlock()
		if (reported && got == healthy) || (!reported && healthy) {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("%s did not become healthy=%v within %v", backend, healthy, waitTimeout)
		}
	}
}

type fixture struct {
	servers []*apiserver
	lb      *Balancer
	events  *healthLog
	client  *http.Client
}

// newFixture starts n API servers and a balancer in front of them. health
// overrides the HTTPS /readyz check when not nil.
func newFixture(t *testing.T, n int, health func(context.Context, string) error) *fixture {
	t.Helper()
	f := &fixture{events: newHealthLog()}
	var backends []string
	for i := range n {
		s := startAPIServer(t, fmt.Sprintf("apiserver-%d", i+1), "127.0.0.1:0")
		f.servers = append(f.servers, s)
		backends = append(backends, s.addr)
	}
	pemData := caPEM(f.servers[0])
	if health == nil {
		health = HTTPSHealth(pemData)
	}
	lb, err := Start(t.Context(), Config{
		Listen:         "127.0.0.1:0",
		Backends:       backends,
		Health:         health,
		Interval:       50 * time.Millisecond,
		OnHealthChange: f.events.record,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lb.Stop() })
	f.lb = lb
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemData)
	// One connection per request, so each request is one round-robin turn.
	f.client = &http.Client{
		Timeout:   waitTimeout,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true},
	}
	return f
}

// get makes n requests through the balancer and returns who answered each.
func (f *fixture) get(t *testing.T, n int) []string {
	t.Helper()
	var who []string
	for i := range n {
		resp, err := f.client.Get("https://" + f.lb.Addr() + "/api")
		if err != nil {
			t.Fatalf("request %d failed: %v", i+1, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		who = append(who, string(body))
	}
	return who
}

func TestRoundRobin(t *testing.T) {
	f := newFixture(t, 3, nil)
	got := f.get(t, 6)
	want := []string{"apiserver-1", "apiserver-2", "apiserver-3", "apiserver-1", "apiserver-2", "apiserver-3"}
	if !slices.Equal(got, want) {
		t.Errorf("answered by %v, want %v", got, want)
	}
	for _, s := range f.lb.Status() {
		if s.TotalConns != 2 {
			t.Errorf("%s: %d connections, want 2", s.Backend, s.TotalConns)
		}
	}
}

func TestStoppedBackendIsSkipped(t *testing.T) {
	f := newFixture(t, 3, nil)
	down := f.servers[1]
	down.stop()
	f.events.wait(t, down.addr, false)

	got := f.get(t, 6)
	want := []string{"apiserver-1", "apiserver-3", "apiserver-1", "apiserver-3", "apiserver-1", "apiserver-3"}
	if !slices.Equal(got, want) {
		t.Errorf("answered by %v, want %v", got, want)
	}
	st := f.lb.Status()[1]
	if st.Healthy || st.LastError == "" || st.LastCheck.IsZero() {
		t.Errorf("status of the stopped backend = %+v, want unhealthy with an error", st)
	}

	// Back on the same address: checked healthy and in the rotation again.
	startAPIServer(t, "apiserver-2-again", down.addr)
	f.events.wait(t, down.addr, true)
	if got := f.get(t, 3); !slices.Contains(got, "apiserver-2-again") {
		t.Errorf("answered by %v, want the restarted backend among them", got)
	}
}

// TestDialFailureTriesNext has a health check that never notices anything,
// so the stopped backend stays in the rotation and only the retry of the
// dial keeps requests from failing.
func TestDialFailureTriesNext(t *testing.T) {
	f := newFixture(t, 3, func(context.Context, string) error { return nil })
	f.servers[1].stop()
	got := f.get(t, 6)
	// Turns 2 and 5 fall on apiserver-2 and move on to apiserver-3.
	want := []string{"apiserver-1", "apiserver-3", "apiserver-3", "apiserver-1", "apiserver-3", "apiserver-3"}
	if !slices.Equal(got, want) {
		t.Errorf("answered by %v, want %v", got, want)
	}
	if st := f.lb.Status()[1]; st.TotalConns != 0 {
		t.Errorf("stopped backend counted %d connections", st.TotalConns)
	}
}

func TestAllBackendsDown(t *testing.T) {
	f := newFixture(t, 3, nil)
	for _, s := range f.servers {
		s.stop()
	}
	for _, s := range f.servers {
		f.events.wait(t, s.addr, false)
	}
	conn, err := net.Dial("tcp", f.lb.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(waitTimeout))
	n, err := conn.Read(make([]byte, 1))
	if n != 0 || !(errors.Is(err, io.EOF) || isReset(err)) {
		t.Fatalf("read = %d, %v; want the connection closed", n, err)
	}
	if _, err := f.client.Get("https://" + f.lb.Addr() + "/api"); err == nil {
		t.Error("request succeeded with every backend down")
	}
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// echoServer answers each connection, after the client half-closes, with
// what it received, upper-cased.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				data, err := io.ReadAll(c)
				if err != nil {
					return
				}
				c.Write([]byte(strings.ToUpper(string(data))))
			}()
		}
	}()
	return ln.Addr().String()
}

func startPlain(t *testing.T, backends ...string) *Balancer {
	t.Helper()
	lb, err := Start(t.Context(), Config{Listen: "127.0.0.1:0", Backends: backends, Interval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lb.Stop() })
	return lb
}

func TestHalfClosePassesThrough(t *testing.T) {
	lb := startPlain(t, echoServer(t))
	conn, err := net.Dial("tcp", lb.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(waitTimeout))
	if _, err := conn.Write([]byte("hello, raft")); err != nil {
		t.Fatal(err)
	}
	conn.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "HELLO, RAFT" {
		t.Errorf("got %q, want %q", got, "HELLO, RAFT")
	}
}

// waitStatus polls Status until cond holds, failing after waitTimeout.
func waitStatus(t *testing.T, lb *Balancer, what string, cond func([]BackendStatus) bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond(lb.Status()) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; status %+v", what, waitTimeout, lb.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestActiveConnsAndClose(t *testing.T) {
	lb := startPlain(t, echoServer(t))
	conn, err := net.Dial("tcp", lb.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	waitStatus(t, lb, "one active connection", func(s []BackendStatus) bool { return s[0].ActiveConns == 1 })

	// Stop drops the proxied connection: the client sees it end.
	done := make(chan error, 1)
	go func() { done <- lb.Stop() }()
	conn.SetReadDeadline(time.Now().Add(waitTimeout))
	if n, err := conn.Read(make([]byte, 1)); n != 0 || !(errors.Is(err, io.EOF) || isReset(err)) {
		t.Fatalf("read after Stop = %d, %v; want the connection closed", n, err)
	}
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatal("Close did not return")
	}
	if st := lb.Status()[0]; st.ActiveConns != 0 || st.TotalConns != 1 {
		t.Errorf("after Close: active %d, total %d; want 0 and 1", st.ActiveConns, st.TotalConns)
	}
	if _, err := net.Dial("tcp", lb.Addr()); err == nil {
		t.Error("balancer still accepts after Close")
	}
}

func TestContextEndStopsBalancer(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	lb, err := Start(ctx, Config{Listen: "127.0.0.1:0", Backends: []string{echoServer(t)}})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	lb.Stop() // waits for everything to stop
	if _, err := net.Dial("tcp", lb.Addr()); err == nil {
		t.Error("balancer still accepts after its context ended")
	}
}

func TestStartErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"no backends", Config{Listen: "127.0.0.1:0"}, "no backends"},
		{"backend without port", Config{Listen: "127.0.0.1:0", Backends: []string{"127.0.0.1"}}, `backend "127.0.0.1"`},
		{"backend twice", Config{Listen: "127.0.0.1:0", Backends: []string{"127.0.0.1:1", "127.0.0.1:1"}}, "given twice"},
		{"address in use", Config{Listen: busy.Addr().String(), Backends: []string{"127.0.0.1:1"}}, "address already in use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lb, err := Start(t.Context(), tt.cfg)
			if err == nil {
				lb.Stop()
				t.Fatalf("Start succeeded, want error containing %q", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
