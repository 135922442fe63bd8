package main

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/lessons"
)

// TestNotesFollowTheWorkspace: klab notes prints the step a workspace
// published in the cluster's state dir, its instructor notes, the next
// step and the clocks, and says so when no workspace has shown a lesson.
func TestNotesFollowTheWorkspace(t *testing.T) {
	testHome(t)
	i18n.SetLang(i18n.English)
	code, _, stderr := klab(t, "notes", "--name", "notes-test", "--once")
	if code != 1 || !strings.Contains(stderr, `no workspace has shown a lesson on cluster notes-test`) {
		t.Fatalf("notes without a workspace: exit %d, stderr %q", code, stderr)
	}
	all, err := lessons.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	var l *lessons.Lesson
	for _, c := range all {
		if c.ID == "raft-election" {
			l = c
		}
	}
	st := l.Steps[2]
	now := time.Now()
	// The workspace writes into its cluster's state dir, which a running
	// cluster has.
	dir, err := lab.StateDir("notes-test")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := lab.WriteLessonPosition("notes-test", lab.LessonPosition{Lesson: l.ID, Step: st.ID, Started: now.Add(-125 * time.Second), StepStarted: now.Add(-5 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := klab(t, "notes", "--name", "notes-test", "--once")
	if code != 0 {
		t.Fatalf("notes exited %d: %s", code, stderr)
	}
	notes, _, _ := strings.Cut(strings.TrimSpace(st.Notes.English), "\n")
	for _, want := range []string{l.Title.English, "Step 3/6  " + st.Title.English, "lesson 2:0", "Instructor notes:", plainText(notes)[:30], "Next: Step 4/6  " + l.Steps[3].Title.English} {
		if !strings.Contains(stdout, want) {
			t.Errorf("notes lack %q:\n%s", want, stdout)
		}
	}

	// Following: a move of the workspace is printed as it happens.
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncWriter{b: &strings.Builder{}}
	done := make(chan error, 1)
	go func() { done <- followNotes(ctx, out, "notes-test", all, false, false) }()
	// The step as it stands is printed first, then the move.
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "Instructor notes:") && time.Now().Before(deadline) {
		time.Sleep(notesPoll / 10)
	}
	if err := lab.WriteLessonPosition("notes-test", lab.LessonPosition{Lesson: l.ID, Step: l.Steps[5].ID, Started: now, StepStarted: now}); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "This is the lesson's last step.") && time.Now().Before(deadline) {
		time.Sleep(notesPoll / 10)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := out.String(); strings.Count(got, "Instructor notes:") != 2 || !strings.Contains(got, "This is the lesson's last step.") {
		t.Errorf("following printed:\n%s", got)
	}
}

// syncWriter lets the test read what another goroutine writes.
type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
