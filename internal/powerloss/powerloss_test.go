package powerloss

import (
	"os"
	"path/filepath"
	"testing"
)

func mountForTest(t *testing.T) *Disk {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no FUSE here: %v", err)
	}
	d, err := Mount(t.TempDir(), t.TempDir())
	if err != nil {
		t.Skipf("cannot mount FUSE here: %v", err)
	}
	t.Cleanup(func() { d.Unmount() })
	return d
}

// What was synced survives a power cut; what was written after is lost,
// whether it overwrote synced bytes, grew the file or made a new one.
func TestCutPowerLosesOnlyUnsyncedWrites(t *testing.T) {
	d := mountForTest(t)
	synced := filepath.Join(d.Dir(), "synced")
	f, err := os.Create(synced)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("hello world"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	// Overwrite part of it and grow it, without a sync.
	if _, err := f.WriteAt([]byte("HELLO"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(", and more"), 11); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.WriteFile(filepath.Join(d.Dir(), "never-synced"), []byte("gone"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(synced); string(got) != "HELLO world, and more" {
		t.Fatalf("before the cut the file reads %q", got)
	}
	if n := d.Unsynced(); n != 2 {
		t.Errorf("%d files with unsynced writes, want 2", n)
	}

	files, bytes, err := d.CutPower()
	if err != nil {
		t.Fatal(err)
	}
	if files != 2 || bytes == 0 {
		t.Errorf("cut lost %d bytes of %d files, want some of 2", bytes, files)
	}
	if got, _ := os.ReadFile(synced); string(got) != "hello world" {
		t.Errorf("after the cut the synced file reads %q, want %q", got, "hello world")
	}
	if got, err := os.ReadFile(filepath.Join(d.Dir(), "never-synced")); err != nil || len(got) != 0 {
		t.Errorf("after the cut the unsynced file reads %q (%v), want it empty", got, err)
	}
	// Writes and syncs go on after the power comes back.
	if err := os.WriteFile(synced, []byte("again"), 0o600); err != nil {
		t.Fatal(err)
	}
}
