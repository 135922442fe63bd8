package app

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// testServer is a server on a fake clock with its log captured.
type testServer struct {
	*server
	clock *fakeClock
	log   *strings.Builder
	exits []exitRequest
}

func newTestServer(t *testing.T, args ...string) *testServer {
	t.Helper()
	cfg, err := parseConfig(args, nil, io.Discard)
	if err != nil {
		t.Fatalf("parseConfig(%q): %v", args, err)
	}
	ts := &testServer{clock: &fakeClock{now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}, log: &strings.Builder{}}
	id := identity{Pod: "web-1", Namespace: "shop", Node: "worker-1", PodIP: "127.250.0.2", Image: "klab/app:v2", Version: "v2"}
	env := map[string]string{"POD_NAME": "web-1", "GREETING": "hi"}
	ts.server = newServer(cfg, id, env, &lineWriter{w: ts.log}, ts.clock.Now)
	ts.server.exit = func(code int, why string) { ts.exits = append(ts.exits, exitRequest{code, why}) }
	return ts
}

// do sends one request and returns the status and body.
func (ts *testServer) do(method, target string, header ...string) (int, string) {
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	ts.handler().ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

func TestRootText(t *testing.T) {
	ts := newTestServer(t, "--message=blue")
	ts.do("GET", "/")
	code, body := ts.do("GET", "/")
	if code != http.StatusOK {
		t.Fatalf("GET / = %d", code)
	}
	for _, want := range []string{
		"Hello from web-1\n", "pod:       web-1\n", "namespace: shop\n", "node:      worker-1\n",
		"pod IP:    127.250.0.2\n", "image:     klab/app:v2\n", "version:   v2\n", "requests:  2\n", "message:   blue\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
}

func TestRootJSON(t *testing.T) {
	tests := []struct {
		name   string
		target string
		header []string
		json   bool
	}{
		{name: "format query", target: "/?format=json", json: true},
		{name: "accept header", target: "/", header: []string{"Accept", "text/html, application/json;q=0.9"}, json: true},
		{name: "format text wins over accept", target: "/?format=text", header: []string{"Accept", "application/json"}},
		{name: "plain by default", target: "/", header: []string{"Accept", "*/*"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t)
			code, body := ts.do("GET", tt.target, tt.header...)
			if code != http.StatusOK {
				t.Fatalf("GET = %d", code)
			}
			var got rootResponse
			err := json.Unmarshal([]byte(body), &got)
			if !tt.json {
				if err == nil {
					t.Fatalf("got JSON, want text: %s", body)
				}
				return
			}
			if err != nil {
				t.Fatalf("decode %q: %v", body, err)
			}
			want := rootResponse{identity: ts.id, Requests: 1}
			if got != want {
				t.Errorf("response = %+v, want %+v", got, want)
			}
		})
	}
}

func TestProbes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		// requests to GET / and time passed before probing
		requests int
		elapsed  time.Duration
		// wantLive and wantReady are the status codes of /healthz and /readyz.
		wantLive, wantReady int
		wantReason          string
	}{
		{name: "healthy by default", requests: 100, elapsed: time.Hour, wantLive: 200, wantReady: 200},
		{name: "liveness fails after duration", args: []string{"--fail-liveness-after=30s"}, elapsed: 30 * time.Second,
			wantLive: 500, wantReady: 200, wantReason: "fail-liveness-after=30s"},
		{name: "liveness passes before duration", args: []string{"--fail-liveness-after=30s"}, elapsed: 29 * time.Second,
			wantLive: 200, wantReady: 200},
		{name: "liveness fails after requests", args: []string{"--fail-liveness-after-requests=3"}, requests: 3,
			wantLive: 500, wantReady: 200, wantReason: "failing after 3 requests"},
		{name: "liveness passes before requests", args: []string{"--fail-liveness-after-requests=3"}, requests: 2,
			wantLive: 200, wantReady: 200},
		{name: "readiness fails after duration", args: []string{"--fail-readiness-after=1m"}, elapsed: time.Minute,
			wantLive: 200, wantReady: 503, wantReason: "fail-readiness-after=1m0s"},
		{name: "readiness fails after requests", args: []string{"--fail-readiness-after-requests=2"}, requests: 2,
			wantLive: 200, wantReady: 503, wantReason: "fail-readiness-after-requests=2"},
		{name: "not ready while starting", args: []string{"--ready-after=10s"}, elapsed: 9 * time.Second,
			wantLive: 200, wantReady: 503, wantReason: "starting"},
		{name: "ready once started", args: []string{"--ready-after=10s"}, elapsed: 10 * time.Second,
			wantLive: 200, wantReady: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t, tt.args...)
			for range tt.requests {
				ts.do("GET", "/")
			}
			ts.clock.Advance(tt.elapsed)
			live, liveBody := ts.do("GET", "/healthz")
			ready, readyBody := ts.do("GET", "/readyz")
			if live != tt.wantLive || ready != tt.wantReady {
				t.Fatalf("/healthz = %d %q, /readyz = %d %q; want %d, %d", live, liveBody, ready, readyBody, tt.wantLive, tt.wantReady)
			}
			if tt.wantReason != "" && !strings.Contains(liveBody+readyBody, tt.wantReason) {
				t.Errorf("bodies %q %q do not say %q", liveBody, readyBody, tt.wantReason)
			}
		})
	}
}

func TestProbesDoNotCountAsRequests(t *testing.T) {
	ts := newTestServer(t, "--fail-liveness-after-requests=1")
	for range 5 {
		if code, _ := ts.do("GET", "/healthz"); code != http.StatusOK {
			t.Fatalf("/healthz = %d after probes only", code)
		}
		ts.do("GET", "/readyz")
	}
	if n := ts.requests.Load(); n != 0 {
		t.Errorf("requests = %d after probes only", n)
	}
}

func TestFailAndRecover(t *testing.T) {
	ts := newTestServer(t)
	steps := []struct {
		method, target string
		wantCode       int
		wantReady      int
	}{
		{"GET", "/fail", http.StatusMethodNotAllowed, 200},
		{"POST", "/fail", 200, 503},
		{"POST", "/fail", 200, 503},
		{"POST", "/recover", 200, 200},
		{"POST", "/recover", 200, 200},
	}
	for i, st := range steps {
		code, body := ts.do(st.method, st.target)
		if code != st.wantCode {
			t.Fatalf("step %d: %s %s = %d %q, want %d", i, st.method, st.target, code, body, st.wantCode)
		}
		if ready, body := ts.do("GET", "/readyz"); ready != st.wantReady {
			t.Fatalf("step %d: /readyz = %d %q, want %d", i, ready, body, st.wantReady)
		}
	}
	if live, _ := ts.do("GET", "/healthz"); live != 200 {
		t.Errorf("/healthz = %d: POST /fail must not touch liveness", live)
	}
}

func TestTerminatingIsNotReady(t *testing.T) {
	ts := newTestServer(t)
	ts.setTerminating()
	if code, body := ts.do("GET", "/readyz"); code != 503 || !strings.Contains(body, "shutting down") {
		t.Errorf("/readyz = %d %q while terminating", code, body)
	}
	if code, _ := ts.do("GET", "/"); code != 200 {
		t.Errorf("GET / = %d: a draining app still answers", code)
	}
}

func TestCrashEndpoint(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		target   string
		wantCode int
		wantExit []exitRequest
	}{
		{name: "default code", target: "/crash", wantCode: 200,
			wantExit: []exitRequest{{1, "crashing with exit code 1 (POST /crash)"}}},
		{name: "configured code", args: []string{"--crash-exit-code=42"}, target: "/crash", wantCode: 200,
			wantExit: []exitRequest{{42, "crashing with exit code 42 (POST /crash)"}}},
		{name: "code query", target: "/crash?code=7", wantCode: 200,
			wantExit: []exitRequest{{7, "crashing with exit code 7 (POST /crash)"}}},
		{name: "bad code", target: "/crash?code=300", wantCode: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t, tt.args...)
			if code, body := ts.do("POST", tt.target); code != tt.wantCode {
				t.Fatalf("POST %s = %d %q", tt.target, code, body)
			}
			if len(ts.exits) != len(tt.wantExit) || (len(tt.wantExit) > 0 && ts.exits[0] != tt.wantExit[0]) {
				t.Errorf("exits = %+v, want %+v", ts.exits, tt.wantExit)
			}
		})
	}
}

func TestRoutes(t *testing.T) {
	tests := []struct {
		method, target string
		want           int
		wantBody       string
	}{
		{"GET", "/nope", 404, ""},
		{"POST", "/", 405, "use GET or HEAD"},
		{"GET", "/crash", 405, "use POST"},
		{"HEAD", "/", 200, ""},
		{"GET", "/env", 200, "GREETING=hi\nPOD_NAME=web-1\n"},
		{"GET", "/env?format=json", 200, `"GREETING": "hi"`},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.target, func(t *testing.T) {
			ts := newTestServer(t)
			code, body := ts.do(tt.method, tt.target)
			if code != tt.want || !strings.Contains(body, tt.wantBody) {
				t.Errorf("%s %s = %d %q, want %d containing %q", tt.method, tt.target, code, body, tt.want, tt.wantBody)
			}
		})
	}
}

func TestRequestLog(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "one line per request", want: `GET /healthz 200 192.0.2.1:1234 "kube-probe/1.37" `},
		{name: "switched off", args: []string{"--log-requests=false"}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t, tt.args...)
			ts.do("GET", "/healthz", "User-Agent", "kube-probe/1.37")
			got := ts.log.String()
			if tt.want == "" {
				if got != "" {
					t.Errorf("log = %q, want nothing", got)
				}
				return
			}
			if !strings.HasPrefix(got, tt.want) || strings.Count(got, "\n") != 1 {
				t.Errorf("log = %q, want one line starting %q", got, tt.want)
			}
		})
	}
}
