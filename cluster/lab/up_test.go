package lab

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestUpRefusesBeforeTouchingAnything(t *testing.T) {
	home := testHome(t)
	ctx := context.Background()
	// No engine answers here, so --runtime docker must refuse at once.
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-docker.sock"))
	tests := []struct {
		name    string
		spec    Spec
		wantErr error
	}{
		{"docker runtime", Spec{Name: "dock", Masters: 1, Speed: 1, Runtime: RuntimeDocker}, ErrDockerUnavailable},
		{"invalid spec", Spec{Name: "bad", Masters: 0, Speed: 1, Runtime: RuntimeLocal}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Up(ctx, tt.spec, Options{})
			if err == nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Up = %v, want %v", err, tt.wantErr)
			}
			if _, err := os.Stat(filepath.Join(home, tt.spec.Name)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("Up left a state dir behind: %v", err)
			}
		})
	}
}

func TestUpWhileRunning(t *testing.T) {
	c := startingCluster(t, "busy")
	_, err := Up(context.Background(), Spec{Name: "busy", Masters: 1, Speed: 1, Runtime: RuntimeLocal}, Options{})
	if !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("Up of a running cluster = %v, want ErrAlreadyRunning", err)
	}
	if _, err := os.Stat(filepath.Join(c.dir, ControlSocket)); err != nil {
		t.Errorf("the running cluster's socket was disturbed: %v", err)
	}
}

func TestUpKeepsStateOfAnotherShape(t *testing.T) {
	home := testHome(t)
	dir := filepath.Join(home, "kept")
	os.MkdirAll(filepath.Join(dir, "nodes", "master-1"), 0o700)
	writeInfo(dir, sampleInfo()) // one master
	_, err := Up(context.Background(), Spec{Name: "kept", Masters: 3, Speed: 1, Runtime: RuntimeLocal}, Options{})
	if !errors.Is(err, ErrStateMismatch) {
		t.Fatalf("Up = %v, want ErrStateMismatch", err)
	}
	for _, p := range []string{InfoFile, "nodes/master-1"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("kept %s was lost: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ControlSocket)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("control socket left behind: %v", err)
	}
}

// TestUpRollsBack checks that a start that fails part-way removes what it
// made: here the context is already cancelled, so no leader can be awaited
// (and, with members that honour ctx, none even starts).
func TestUpRollsBack(t *testing.T) {
	home := testHome(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var failed []StepEvent
	_, err := Up(ctx, Spec{Name: "aborted", Masters: 1, Speed: 1, Runtime: RuntimeLocal, NoFsync: true}, Options{
		Progress:      func(ev StepEvent) { failed = appendFailed(failed, ev) },
		LeaderTimeout: 5 * time.Second,
	})
	if err == nil {
		t.Fatal("Up with a cancelled context succeeded")
	}
	if len(failed) != 1 {
		t.Errorf("failed steps = %+v, want exactly one", failed)
	}
	if _, err := os.Stat(filepath.Join(home, "aborted")); !errors.Is(err, os.ErrNotExist) {
		entries, _ := os.ReadDir(filepath.Join(home, "aborted"))
		t.Errorf("state dir left behind (%v): %v", err, entries)
	}
}

func appendFailed(evs []StepEvent, ev StepEvent) []StepEvent {
	if ev.Phase == StepFailed {
		return append(evs, ev)
	}
	return evs
}
