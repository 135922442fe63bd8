package atomicwriter

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWriteLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kube-api-access-x")
	w := New(dir)
	changed, err := w.Write(map[string]File{
		"token": {Data: []byte("t1"), Mode: 0o600}, "namespace": {Data: []byte("default")},
		"ca.crt": {Data: []byte("CA")}, "conf/app.yaml": {Data: []byte("a: 1")},
	})
	if err != nil || !changed {
		t.Fatalf("first write: changed=%v err=%v", changed, err)
	}
	target, err := os.Readlink(filepath.Join(dir, DataDirName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(target, "..20") || strings.Contains(target, "/") {
		t.Errorf("..data -> %q, want a timestamped sibling directory", target)
	}
	for name, want := range map[string]string{"token": "..data/token", "namespace": "..data/namespace", "ca.crt": "..data/ca.crt", "conf": "..data/conf"} {
		got, err := os.Readlink(filepath.Join(dir, name))
		if err != nil || got != want {
			t.Errorf("%s -> %q (%v), want %q", name, got, err, want)
		}
	}
	if got := read(t, filepath.Join(dir, "conf", "app.yaml")); got != "a: 1" {
		t.Errorf("conf/app.yaml = %q", got)
	}
	for name, want := range map[string]os.FileMode{"token": 0o600, "namespace": 0o644} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil || info.Mode().Perm() != want {
			t.Errorf("%s mode %v (%v), want %v", name, info.Mode().Perm(), err, want)
		}
	}
}

func TestRewriteSwitchesAndCleansUp(t *testing.T) {
	dir := t.TempDir()
	w := New(dir)
	if _, err := w.Write(map[string]File{"token": {Data: []byte("t1")}, "old": {Data: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	first, _ := os.Readlink(filepath.Join(dir, DataDirName))

	changed, err := w.Write(map[string]File{"token": {Data: []byte("t1")}, "old": {Data: []byte("x")}})
	if err != nil || changed {
		t.Fatalf("same payload: changed=%v err=%v, want no change", changed, err)
	}
	if again, _ := os.Readlink(filepath.Join(dir, DataDirName)); again != first {
		t.Errorf("same payload moved ..data from %s to %s", first, again)
	}

	changed, err = w.Write(map[string]File{"token": {Data: []byte("t2")}, "new": {Data: []byte("y")}})
	if err != nil || !changed {
		t.Fatalf("new payload: changed=%v err=%v", changed, err)
	}
	if got := read(t, filepath.Join(dir, "token")); got != "t2" {
		t.Errorf("token = %q after rewrite, want t2", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "old")); !os.IsNotExist(err) {
		t.Errorf("link to a dropped file still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, first)); !os.IsNotExist(err) {
		t.Errorf("old version %s still there: %v", first, err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 4 { // ..<ts>, ..data, new, token
		t.Errorf("directory holds %v, want one version, ..data and two links", names)
	}

	// A mode change alone is a change.
	if changed, err := w.Write(map[string]File{"token": {Data: []byte("t2"), Mode: 0o400}, "new": {Data: []byte("y")}}); err != nil || !changed {
		t.Errorf("mode change: changed=%v err=%v", changed, err)
	}
}

// A reader never sees a missing or mixed file while versions are written.
func TestReadersSeeWholeVersions(t *testing.T) {
	dir := t.TempDir()
	w := New(dir)
	payload := func(i int) map[string]File {
		v := []byte(strings.Repeat(string(rune('a'+i%26)), 4096))
		return map[string]File{"a": {Data: v}, "b": {Data: v}}
	}
	if _, err := w.Write(payload(0)); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	errs := make(chan string, 4)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				b, err := os.ReadFile(filepath.Join(dir, "a"))
				if errors.Is(err, fs.ErrNotExist) {
					// The path was resolved into a version that was
					// removed before the open reached it: upstream's
					// writer leaves the same window (the kernel walks
					// a/ → ..data → ..<ts>/a one link at a time), and
					// with versions written back to back it is hit. The
					// reader tries again, as a program re-reading a
					// changed file does; what must never happen is a
					// read of half a version.
					continue
				}
				if err != nil {
					errs <- err.Error()
					return
				}
				reads.Add(1)
				if len(b) != 4096 || strings.Count(string(b), string(b[:1])) != 4096 {
					errs <- "torn read"
					return
				}
			}
		}()
	}
	deadline := time.Now().Add(300 * time.Millisecond)
	for i := 1; time.Now().Before(deadline); i++ {
		if _, err := w.Write(payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if reads.Load() == 0 {
		t.Error("no read of a whole version succeeded while versions were written")
	}
}

func TestValidate(t *testing.T) {
	for _, p := range []string{"", "/abs", "..x", "a/../b", "..", strings.Repeat("x", 256)} {
		if err := Validate(p); err == nil {
			t.Errorf("Validate(%q) = nil, want an error", p)
		}
		if _, err := New(t.TempDir()).Write(map[string]File{p: {Data: []byte("x")}}); err == nil {
			t.Errorf("Write with path %q succeeded", p)
		}
	}
	for _, p := range []string{"token", "a/b/c", "x..y", ".hidden"} {
		if err := Validate(p); err != nil {
			t.Errorf("Validate(%q) = %v", p, err)
		}
	}
}
