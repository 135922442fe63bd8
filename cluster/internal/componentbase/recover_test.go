package componentbase

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a log sink the server's goroutines write to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServerRecoversPanics: a handler's panic is logged at error level with
// its stack, the client gets a 500, and the server serves the next request.
func TestServerRecoversPanics(t *testing.T) {
	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))
	mux := http.NewServeMux()
	mux.HandleFunc("/boom", func(http.ResponseWriter, *http.Request) { panic("nil map in a handler") })
	mux.HandleFunc("/half", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		panic("after the headers")
	})
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "fine") })
	srv, err := Listen(context.Background(), ServerConfig{Addr: "127.0.0.1:0", Handler: mux, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(func(err error) { t.Error(err) })
	defer srv.Shutdown(false, 0)
	base := "http://" + srv.Addr()

	resp, err := http.Get(base + "/boom")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("a panicking handler answered %d, want 500", resp.StatusCode)
	}
	if got := logs.String(); !strings.Contains(got, "level=ERROR") || !strings.Contains(got, "nil map in a handler") ||
		!strings.Contains(got, "GET /boom") || !strings.Contains(got, "recover_test.go") {
		t.Errorf("log %q; want the panic at error level with the request and the stack", got)
	}

	// A response already begun is cut, not completed as if all were well.
	if resp, err := http.Get(base + "/half"); err == nil {
		_, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if rerr == nil {
			t.Errorf("a response cut by a panic read to its end without error")
		}
	}
	if !strings.Contains(logs.String(), "after the headers") {
		t.Errorf("the panic after the headers was not logged")
	}

	resp, err = http.Get(base + "/ok")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "fine" {
		t.Errorf("after two panics the server answered %q, want fine", body)
	}
}
