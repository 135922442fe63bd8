package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for _, content := range []string{"first", "second, longer than the first"} {
		if err := Write(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read back %q, %v; want %q", got, err, content)
		}
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", st.Mode().Perm(), err)
	}
	assertNoTempFiles(t, dir)
}

func TestWriteLeavesNothingOnFailure(t *testing.T) {
	dir := t.TempDir()
	// A non-empty directory where the file should go makes the final rename
	// fail after the data was written.
	target := filepath.Join(dir, "cluster.json")
	if err := os.MkdirAll(filepath.Join(target, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Write(target, []byte("{}"), 0o600); err == nil {
		t.Fatal("Write over a directory succeeded")
	}
	assertNoTempFiles(t, dir)
	if err := Write(filepath.Join(dir, "missing", "f"), []byte("{}"), 0o600); err == nil {
		t.Fatal("Write into a missing directory succeeded")
	}
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}
