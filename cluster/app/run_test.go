package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// testHost returns a loopback address of its own for one test, so tests
// can use the app's default port without colliding. Linux routes all of
// 127.0.0.0/8 to the loopback interface.
func testHost(t *testing.T) string {
	t.Helper()
	if goruntime.GOOS != "linux" {
		t.Skip("needs Linux, which routes all of 127.0.0.0/8 to loopback")
	}
	return fmt.Sprintf("127.251.%d.%d", 1+rand.IntN(254), 1+rand.IntN(254))
}

// output is a writer that a test can wait on for a line to appear.
type output struct {
	mu      sync.Mutex
	buf     strings.Builder
	changed chan struct{}
}

func newOutput() *output { return &output{changed: make(chan struct{})} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	close(o.changed)
	o.changed = make(chan struct{})
	return len(p), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor waits until the output contains s.
func (o *output) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		o.mu.Lock()
		found, changed := strings.Contains(o.buf.String(), s), o.changed
		o.mu.Unlock()
		if found {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("output never contained %q:\n%s", s, o.String())
		}
	}
}

// running is one app started by a test.
type running struct {
	host           string
	cancel         context.CancelFunc
	kill           chan struct{}
	stdout, stderr *output
	exit           chan int
}

func start(t *testing.T, opts Options) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{host: opts.ListenHost, cancel: cancel, kill: make(chan struct{}),
		stdout: newOutput(), stderr: newOutput(), exit: make(chan int, 1)}
	if r.host == "" {
		r.host = testHost(t)
		opts.ListenHost = r.host
	}
	opts.Stdout, opts.Stderr, opts.Kill = r.stdout, r.stderr, r.kill
	go func() { r.exit <- Run(ctx, opts) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.kill:
		default:
			close(r.kill)
		}
		<-r.exit
	})
	return r
}

// waitExit returns the app's exit code.
func (r *running) waitExit(t *testing.T) int {
	t.Helper()
	select {
	case code := <-r.exit:
		r.exit <- code // for the cleanup
		return code
	case <-time.After(5 * time.Second):
		t.Fatalf("app did not exit; stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		return 0
	}
}

func (r *running) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + net.JoinHostPort(r.host, "8080") + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestRunServesIdentityOnDefaultPort(t *testing.T) {
	host := testHost(t)
	r := start(t, Options{ListenHost: host, Env: []string{
		"POD_NAME=web-1", "POD_NAMESPACE=shop", "NODE_NAME=worker-1", "KLAB_IMAGE=klab/app:v2", "MESSAGE=hi"}})
	r.stdout.waitFor(t, "listening on "+host+":8080")
	r.stdout.waitFor(t, "switches: message=hi")
	code, body := r.get(t, "/?format=json")
	if code != 200 {
		t.Fatalf("GET / = %d %s", code, body)
	}
	var got rootResponse
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("decode: %v", err)
	}
	want := rootResponse{identity: identity{Pod: "web-1", Namespace: "shop", Node: "worker-1", PodIP: host,
		Image: "klab/app:v2", Version: "v2"}, Requests: 1, Message: "hi"}
	if got != want {
		t.Errorf("GET / = %+v, want %+v", got, want)
	}
	r.stdout.waitFor(t, "GET /?format=json 200 ")
}

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		// act does what ends the app, once it listens.
		act        func(t *testing.T, r *running)
		want       int
		wantStdout string
		wantStderr string
	}{
		{name: "SIGTERM shuts down gracefully", act: func(t *testing.T, r *running) { r.cancel() },
			want: 0, wantStdout: "shut down"},
		{name: "SIGKILL", act: func(t *testing.T, r *running) { close(r.kill) }, want: ExitKilled},
		{name: "crash after a duration", args: []string{"--crash-after=20ms"}, want: 1,
			wantStderr: "crashing with exit code 1 (crash-after=20ms)"},
		{name: "crash with a chosen code", args: []string{"--crash-after=20ms", "--crash-exit-code=3"}, want: 3},
		{name: "batch job completes", args: []string{"--exit-after=20ms"}, want: 0,
			wantStderr: "exiting with code 0 (exit-after=20ms)"},
		{name: "batch job fails", args: []string{"--exit-after=20ms", "--exit-code=4"}, want: 4},
		{name: "POST /crash", act: func(t *testing.T, r *running) {
			resp, err := http.Post("http://"+r.host+":8080/crash?code=9", "", nil)
			if err != nil {
				t.Fatalf("POST /crash: %v", err)
			}
			resp.Body.Close()
		}, want: 9},
		{name: "kill during a slow shutdown", args: []string{"--shutdown-delay=1m"}, act: func(t *testing.T, r *running) {
			r.cancel()
			r.stdout.waitFor(t, "shutdown-delay=1m0s")
			close(r.kill)
		}, want: ExitKilled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := start(t, Options{Args: tt.args})
			r.stdout.waitFor(t, "listening on")
			if tt.act != nil {
				tt.act(t, r)
			}
			if code := r.waitExit(t); code != tt.want {
				t.Fatalf("exit code = %d, want %d; stderr:\n%s", code, tt.want, r.stderr)
			}
			if !strings.Contains(r.stdout.String(), tt.wantStdout) || !strings.Contains(r.stderr.String(), tt.wantStderr) {
				t.Errorf("stdout %q, stderr %q; want %q, %q", r.stdout, r.stderr, tt.wantStdout, tt.wantStderr)
			}
			// The port is free again, for the container's next attempt.
			l, err := net.Listen("tcp", r.host+":8080")
			if err != nil {
				t.Fatalf("port still taken after exit: %v", err)
			}
			l.Close()
		})
	}
}

func TestRunStartupFailures(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		occupy     bool
		want       int
		wantStderr string
	}{
		{name: "bad flag", args: []string{"--bogus"}, want: ExitUsage, wantStderr: "flag provided but not defined"},
		{name: "help", args: []string{"--help"}, want: 0, wantStderr: "-crash-after"},
		{name: "port in use", occupy: true, want: 1, wantStderr: "address already in use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := testHost(t)
			if tt.occupy {
				l, err := net.Listen("tcp", host+":8080")
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
			}
			var stderr strings.Builder
			code := Run(context.Background(), Options{Args: tt.args, ListenHost: host, Stderr: &stderr})
			if code != tt.want || !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("Run = %d, stderr %q; want %d, %q", code, stderr.String(), tt.want, tt.wantStderr)
			}
		})
	}
}

func TestRunShutdownDelayKeepsServingWhileNotReady(t *testing.T) {
	r := start(t, Options{Args: []string{"--shutdown-delay=200ms"}})
	r.stdout.waitFor(t, "listening on")
	if code, _ := r.get(t, "/readyz"); code != 200 {
		t.Fatalf("/readyz = %d before SIGTERM", code)
	}
	r.cancel()
	r.stdout.waitFor(t, "received SIGTERM")
	if code, _ := r.get(t, "/readyz"); code != 503 {
		t.Errorf("/readyz = %d while draining, want 503", code)
	}
	if code, _ := r.get(t, "/"); code != 200 {
		t.Errorf("GET / = %d while draining, want 200", code)
	}
	if code := r.waitExit(t); code != 0 {
		t.Errorf("exit code = %d after draining, want 0", code)
	}
}

func TestRunSlowResponse(t *testing.T) {
	r := start(t, Options{Env: []string{"RESPONSE_DELAY=150ms"}})
	r.stdout.waitFor(t, "listening on")
	begin := time.Now()
	if code, _ := r.get(t, "/"); code != 200 {
		t.Fatalf("GET / = %d", code)
	}
	if took := time.Since(begin); took < 150*time.Millisecond {
		t.Errorf("GET / took %s, want at least the 150ms delay", took)
	}
	begin = time.Now()
	r.get(t, "/healthz")
	if took := time.Since(begin); took >= 150*time.Millisecond {
		t.Errorf("/healthz took %s: probes are not delayed", took)
	}
}

// accounter is a MemoryAccounter with a limit, as the in-process runtime
// has.
type accounter struct {
	mu      sync.Mutex
	limit   int64
	granted int64
	calls   int
}

var errLimit = errors.New("over the limit")

func (a *accounter) Allocate(n int64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	if a.limit > 0 && a.granted+n > a.limit {
		return errLimit
	}
	a.granted += n
	return nil
}

func (a *accounter) state() (granted int64, calls int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.granted, a.calls
}

func TestRunMemory(t *testing.T) {
	tests := []struct {
		name        string
		args        []string
		limit       int64
		wantExit    bool
		wantGranted int64
		wantCalls   int
	}{
		{name: "allocates at start in chunks", args: []string{"--memory=3Mi"}, wantGranted: 3 << 20, wantCalls: 3},
		{name: "an odd size", args: []string{"--memory=1500Ki"}, wantGranted: 1500 << 10, wantCalls: 2},
		{name: "killed at start over the limit", args: []string{"--memory=3Mi"}, limit: 2 << 20,
			wantExit: true, wantGranted: 2 << 20, wantCalls: 3},
		{name: "killed while growing", args: []string{"--memory=1Mi", "--memory-grow=1Mi", "--memory-grow-interval=5ms"},
			limit: 4 << 20, wantExit: true, wantGranted: 4 << 20, wantCalls: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acc := &accounter{limit: tt.limit}
			r := start(t, Options{Args: tt.args, Memory: acc})
			if tt.wantExit {
				if code := r.waitExit(t); code != ExitKilled {
					t.Fatalf("exit code = %d, want %d", code, ExitKilled)
				}
				if s := r.stderr.String(); s != "" {
					t.Errorf("an OOM-killed app said %q", s)
				}
			} else {
				r.stdout.waitFor(t, "listening on")
				_, body := r.get(t, "/?format=json")
				var resp rootResponse
				if err := json.Unmarshal([]byte(body), &resp); err != nil || resp.MemoryBytes != tt.wantGranted {
					t.Errorf("GET / memoryBytes = %d (%v), want %d", resp.MemoryBytes, err, tt.wantGranted)
				}
			}
			if granted, calls := acc.state(); granted != tt.wantGranted || calls != tt.wantCalls {
				t.Errorf("accounter granted %d in %d calls, want %d in %d", granted, calls, tt.wantGranted, tt.wantCalls)
			}
		})
	}
}

func TestRunStopsGrowingAfterExit(t *testing.T) {
	acc := &accounter{}
	r := start(t, Options{Args: []string{"--memory-grow=1Mi", "--memory-grow-interval=1ms"}, Memory: acc})
	r.stdout.waitFor(t, "memory: 2Mi allocated")
	r.cancel()
	if code := r.waitExit(t); code != 0 {
		t.Fatalf("exit code = %d", code)
	}
	before, _ := acc.state()
	time.Sleep(20 * time.Millisecond) // twenty intervals in which nothing may grow
	if after, _ := acc.state(); after != before {
		t.Errorf("app allocated %d bytes after Run returned", after-before)
	}
}
