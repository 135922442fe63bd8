package app

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
)

// server answers the app's endpoints and keeps the state the switches look
// at.
type server struct {
	cfg     config
	id      identity
	env     map[string]string
	log     *lineWriter
	mem     *hog
	cpu     CPUAccounter
	now     func() time.Time
	started time.Time
	// exit asks Run to end the app with code; the first request wins.
	exit func(code int, why string)

	// requests counts answers to GET /.
	requests atomic.Int64

	mu sync.Mutex
	// failedByRequest is set by POST /fail and cleared by POST /recover.
	failedByRequest bool
	// terminating is set once the app is asked to stop.
	terminating bool
}

func newServer(cfg config, id identity, env map[string]string, log *lineWriter, now func() time.Time) *server {
	return &server{
		cfg: cfg, id: id, env: env, log: log, now: now, started: now(),
		mem:  &hog{},
		exit: func(int, string) {},
	}
}

// handler routes the endpoints and logs every request.
func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", s.serveRoot)
	mux.HandleFunc("/healthz", s.serveHealthz)
	mux.HandleFunc("/readyz", s.serveReadyz)
	mux.HandleFunc("/env", s.serveEnv)
	mux.HandleFunc("/fail", s.serveFail)
	mux.HandleFunc("/recover", s.serveRecover)
	mux.HandleFunc("/crash", s.serveCrash)
	return s.logRequests(mux)
}

// livenessFailure says why /healthz fails, or "" when it passes.
func (s *server) livenessFailure() string {
	if d := s.cfg.failLivenessAfter; d > 0 && s.now().Sub(s.started) >= d {
		return fmt.Sprintf("failing since %s after start (fail-liveness-after=%s)", d, d)
	}
	if n := s.cfg.failLivenessAfterRequests; n > 0 && s.requests.Load() >= n {
		return fmt.Sprintf("failing after %d requests (fail-liveness-after-requests=%d)", n, n)
	}
	return ""
}

// readinessFailure says why /readyz fails, or "" when the app is ready.
func (s *server) readinessFailure() string {
	s.mu.Lock()
	terminating, failedByRequest := s.terminating, s.failedByRequest
	s.mu.Unlock()
	elapsed := s.now().Sub(s.started)
	switch {
	case terminating:
		return "shutting down"
	case failedByRequest:
		return "failed by POST /fail; POST /recover to undo"
	case s.cfg.readyAfter > 0 && elapsed < s.cfg.readyAfter:
		return fmt.Sprintf("starting: ready %s after start (ready-after=%s)", s.cfg.readyAfter, s.cfg.readyAfter)
	case s.cfg.failReadinessAfter > 0 && elapsed >= s.cfg.failReadinessAfter:
		d := s.cfg.failReadinessAfter
		return fmt.Sprintf("failing since %s after start (fail-readiness-after=%s)", d, d)
	case s.cfg.failReadinessAfterRequests > 0 && s.requests.Load() >= s.cfg.failReadinessAfterRequests:
		n := s.cfg.failReadinessAfterRequests
		return fmt.Sprintf("failing after %d requests (fail-readiness-after-requests=%d)", n, n)
	}
	return ""
}

func (s *server) setTerminating() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.terminating = true
}

// rootResponse is what GET / answers.
type rootResponse struct {
	identity
	Requests    int64  `json:"requests"`
	MemoryBytes int64  `json:"memoryBytes,omitempty"`
	Message     string `json:"message,omitempty"`
}

func (s *server) serveRoot(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	if !allowMethod(w, r, http.MethodGet, http.MethodHead) {
		return
	}
	if d := s.cfg.responseDelay; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	burnCPU(s.cfg.cpuPerRequest, s.cpu, r.Context().Done())
	if s.cfg.standIn != "" {
		s.requests.Add(1)
		writeWelcome(w, r, s.cfg.standIn)
		return
	}
	resp := rootResponse{
		identity:    s.id,
		Requests:    s.requests.Add(1),
		MemoryBytes: s.mem.allocated(),
		Message:     s.cfg.message,
	}
	if wantsJSON(r) {
		componentbase.WriteJSON(w, http.StatusOK, resp)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Hello from %s\n", orUnknown(resp.Pod))
	line := func(key, value string) { fmt.Fprintf(&b, "%-10s %s\n", key+":", value) }
	line("pod", orUnknown(resp.Pod))
	line("namespace", orUnknown(resp.Namespace))
	line("node", orUnknown(resp.Node))
	line("pod IP", orUnknown(resp.PodIP))
	line("image", orUnknown(resp.Image))
	line("version", orUnknown(resp.Version))
	line("requests", strconv.FormatInt(resp.Requests, 10))
	if resp.MemoryBytes > 0 {
		line("memory", formatBytes(resp.MemoryBytes))
	}
	if resp.Message != "" {
		line("message", resp.Message)
	}
	writeText(w, http.StatusOK, b.String())
}

func (s *server) serveHealthz(w http.ResponseWriter, r *http.Request) {
	if !allowMethod(w, r, http.MethodGet, http.MethodHead) {
		return
	}
	if why := s.livenessFailure(); why != "" {
		writeText(w, http.StatusInternalServerError, "unhealthy: "+why+"\n")
		return
	}
	writeText(w, http.StatusOK, "ok\n")
}

func (s *server) serveReadyz(w http.ResponseWriter, r *http.Request) {
	if !allowMethod(w, r, http.MethodGet, http.MethodHead) {
		return
	}
	if why := s.readinessFailure(); why != "" {
		writeText(w, http.StatusServiceUnavailable, "not ready: "+why+"\n")
		return
	}
	writeText(w, http.StatusOK, "ok\n")
}

func (s *server) serveEnv(w http.ResponseWriter, r *http.Request) {
	if !allowMethod(w, r, http.MethodGet, http.MethodHead) {
		return
	}
	if wantsJSON(r) {
		componentbase.WriteJSON(w, http.StatusOK, s.env)
		return
	}
	keys := make([]string, 0, len(s.env))
	for k := range s.env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, s.env[k])
	}
	writeText(w, http.StatusOK, b.String())
}

func (s *server) serveFail(w http.ResponseWriter, r *http.Request) {
	if !allowMethod(w, r, http.MethodPost) {
		return
	}
	s.mu.Lock()
	s.failedByRequest = true
	s.mu.Unlock()
	writeText(w, http.StatusOK, "readiness fails until POST /recover\n")
}

func (s *server) serveRecover(w http.ResponseWriter, r *http.Request) {
	if !allowMethod(w, r, http.MethodPost) {
		return
	}
	s.mu.Lock()
	s.failedByRequest = false
	s.mu.Unlock()
	writeText(w, http.StatusOK, "readiness no longer failed by POST /fail\n")
}

func (s *server) serveCrash(w http.ResponseWriter, r *http.Request) {
	if !allowMethod(w, r, http.MethodPost) {
		return
	}
	code := s.cfg.crashExitCode
	if v := r.URL.Query().Get("code"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 255 {
			writeText(w, http.StatusBadRequest, fmt.Sprintf("invalid exit code %q: want 0 to 255\n", v))
			return
		}
		code = n
	}
	writeText(w, http.StatusOK, fmt.Sprintf("crashing with exit code %d\n", code))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	s.exit(code, fmt.Sprintf("crashing with exit code %d (POST /crash)", code))
}

// logRequests logs one line per request once it is answered.
func (s *server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		if s.cfg.logRequests {
			s.log.printf("%s %s %d %s %q %s", r.Method, r.URL.RequestURI(), rec.status, r.RemoteAddr,
				r.UserAgent(), time.Since(start).Round(time.Microsecond))
		}
	})
}

// statusRecorder remembers the status code a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// wantsJSON reports whether the client asked for JSON, with ?format=json or
// an Accept header naming application/json; ?format=text wins over Accept.
func wantsJSON(r *http.Request) bool {
	switch r.URL.Query().Get("format") {
	case "json":
		return true
	case "text":
		return false
	}
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "application/json" {
			return true
		}
	}
	return false
}

func allowMethod(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	writeText(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed: use %s\n", r.Method, strings.Join(methods, " or ")))
	return false
}

func writeText(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}

// lineWriter writes whole lines to one writer from many goroutines, so
// request lines never interleave.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format+"\n", args...)
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
