package main

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// runTB lets this program use the etcdtest harness, which takes a
// testing.TB, outside `go test`. It implements the methods the harness
// calls; the embedded nil testing.TB only supplies the interface's
// unexported method, so any other call panics and shows what is missing.
// Fatal panics with a fatalError, which startKlab recovers into an error.
type runTB struct {
	testing.TB
	name     string
	mu       sync.Mutex
	cleanups []func()
	failed   bool
}

// fatalError carries a Fatal message from the harness to startKlab.
type fatalError string

func (e fatalError) Error() string { return string(e) }

func (t *runTB) Helper()      {}
func (t *runTB) Name() string { return t.name }

func (t *runTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

// runCleanups runs the registered cleanups, last registered first, as
// testing does.
func (t *runTB) runCleanups() {
	for {
		t.mu.Lock()
		n := len(t.cleanups)
		if n == 0 {
			t.mu.Unlock()
			return
		}
		f := t.cleanups[n-1]
		t.cleanups = t.cleanups[:n-1]
		t.mu.Unlock()
		f()
	}
}

func (t *runTB) TempDir() string {
	dir, err := os.MkdirTemp("", "etcdbench-klab-")
	if err != nil {
		t.Fatalf("temp dir: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (t *runTB) Log(args ...any)                 { fmt.Fprintln(os.Stderr, args...) }
func (t *runTB) Logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

func (t *runTB) Error(args ...any) {
	t.markFailed()
	t.Log(args...)
}

func (t *runTB) Errorf(format string, args ...any) {
	t.markFailed()
	t.Logf(format, args...)
}

func (t *runTB) Fatal(args ...any) {
	t.markFailed()
	panic(fatalError(fmt.Sprint(args...)))
}

func (t *runTB) Fatalf(format string, args ...any) {
	t.markFailed()
	panic(fatalError(fmt.Sprintf(format, args...)))
}

func (t *runTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *runTB) markFailed() {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
}
