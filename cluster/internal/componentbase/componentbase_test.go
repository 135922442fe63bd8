package componentbase

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestLifecycle(t *testing.T) {
	t.Run("start once", func(t *testing.T) {
		l := NewLifecycle(func(bool) {})
		if err := l.Begin(); err != nil {
			t.Fatal(err)
		}
		if err := l.Begin(); !errors.Is(err, ErrStarted) {
			t.Errorf("second Begin = %v, want ErrStarted", err)
		}
	})
	t.Run("stop before start", func(t *testing.T) {
		var graceful, started atomic.Bool
		var l *Lifecycle
		l = NewLifecycle(func(g bool) { graceful.Store(g); started.Store(l.Started()) })
		if err := l.Stop(); err != nil {
			t.Fatal(err)
		}
		<-l.Done()
		if !graceful.Load() || started.Load() {
			t.Errorf("shutdown ran graceful=%v started=%v, want a graceful one of a component never started", graceful.Load(), started.Load())
		}
		if err := l.Begin(); !errors.Is(err, ErrStopped) {
			t.Errorf("Begin after Stop = %v, want ErrStopped", err)
		}
	})
	t.Run("shutdown runs once", func(t *testing.T) {
		var runs atomic.Int32
		release := make(chan struct{})
		l := NewLifecycle(func(bool) { runs.Add(1); <-release })
		l.Begin()
		stopped := make(chan struct{})
		go func() { l.Stop(); close(stopped) }()
		<-l.Quit()
		killed := make(chan struct{})
		go func() { l.Kill(); close(killed) }()
		select {
		case <-killed:
			t.Fatal("Kill returned before the shutdown under way finished")
		case <-time.After(20 * time.Millisecond):
		}
		close(release)
		<-stopped
		<-killed
		if n := runs.Load(); n != 1 {
			t.Errorf("shutdown ran %d times", n)
		}
		if l.Err() != nil {
			t.Errorf("Err after Stop = %v", l.Err())
		}
	})
	t.Run("fail keeps why", func(t *testing.T) {
		var graceful atomic.Bool
		graceful.Store(true)
		l := NewLifecycle(func(g bool) { graceful.Store(g) })
		l.Begin()
		lost := errors.New("lease lost")
		l.Fail(lost)
		<-l.Done()
		if graceful.Load() {
			t.Error("a failure shut down gracefully")
		}
		if !errors.Is(l.Err(), lost) || !errors.Is(l.Stop(), lost) {
			t.Errorf("Err %v, Stop %v; want the failure", l.Err(), l.Stop())
		}
		l.Fail(errors.New("later"))
		if !errors.Is(l.Err(), lost) {
			t.Errorf("a later failure replaced the first: %v", l.Err())
		}
	})
	t.Run("a failure after Stop is not kept", func(t *testing.T) {
		l := NewLifecycle(func(bool) {})
		l.Begin()
		l.Stop()
		l.Fail(errors.New("too late"))
		if l.Err() != nil {
			t.Errorf("Err = %v after Stop", l.Err())
		}
	})
	t.Run("go waits", func(t *testing.T) {
		var l *Lifecycle
		quit := make(chan struct{})
		var returned atomic.Bool
		l = NewLifecycle(func(bool) { close(quit); l.Wait() })
		l.Begin()
		if !l.Go(func() { <-quit; time.Sleep(10 * time.Millisecond); returned.Store(true) }) {
			t.Fatal("Go refused while running")
		}
		l.Stop()
		if !returned.Load() {
			t.Error("Stop returned before the goroutine")
		}
		if l.Go(func() {}) {
			t.Error("Go ran after Stop")
		}
	})
}

func TestServer(t *testing.T) {
	inFlight := make(chan struct{})
	finish := make(chan struct{})
	s, err := Listen(context.Background(), ServerConfig{Addr: "127.0.0.1:0", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(inFlight)
		<-finish
		io.WriteString(w, "done")
	})})
	if err != nil {
		t.Fatal(err)
	}
	failed := make(chan error, 1)
	served := make(chan struct{})
	go func() { s.Serve(func(err error) { failed <- err }); close(served) }()
	answer := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + s.Addr())
		if err != nil {
			answer <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answer <- string(b)
	}()
	<-inFlight
	go func() { time.Sleep(20 * time.Millisecond); close(finish) }()
	s.Shutdown(true, 5*time.Second)
	if got := <-answer; got != "done" {
		t.Errorf("request in flight got %q; a graceful shutdown lets it finish", got)
	}
	<-served
	select {
	case err := <-failed:
		t.Errorf("a shutdown reported as a failure: %v", err)
	default:
	}
}

func TestWriteJSON(t *testing.T) {
	w := httptest.NewRecorder()
	WriteJSON(w, http.StatusCreated, map[string]int{"a": 1})
	if w.Code != http.StatusCreated || w.Body.String() != "{\n  \"a\": 1\n}\n" || w.Header().Get("Content-Type") != "application/json" {
		t.Errorf("%d %q %q", w.Code, w.Header().Get("Content-Type"), w.Body.String())
	}
	w = httptest.NewRecorder()
	WriteJSON(w, http.StatusOK, math.Inf(1))
	if w.Code != http.StatusInternalServerError {
		t.Errorf("an unencodable value answered %d %q", w.Code, w.Body.String())
	}
}

func TestLoggerDiscardsWithoutOne(t *testing.T) {
	if Logger(nil).Enabled(context.Background(), slog.LevelError) {
		t.Error("a nil logger's replacement logs")
	}
}
