package lessons

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func testLesson() *Lesson {
	return &Lesson{ID: "raft", Steps: []*Step{{ID: "one"}, {ID: "two"}, {ID: "three"}}}
}

func TestProgressKeepsSteps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "klab", ProgressFile) // the folder does not exist yet
	p, err := OpenProgress(path)
	if err != nil {
		t.Fatal(err)
	}
	l := testLesson()
	if done, total := p.Completed(l); done != 0 || total != 3 {
		t.Errorf("new progress: %d/%d", done, total)
	}
	if err := p.Complete("raft", "one"); err != nil {
		t.Fatal(err)
	}
	if err := p.Complete("raft", "two"); err != nil {
		t.Fatal(err)
	}
	if err := p.SetCurrent("raft", "three"); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", st.Mode().Perm())
	}

	// A new process reads it back.
	q, err := OpenProgress(path)
	if err != nil {
		t.Fatal(err)
	}
	if !q.Done("raft", "one") || !q.Done("raft", "two") || q.Done("raft", "three") || q.Done("other", "one") {
		t.Error("completed steps not read back")
	}
	if done, total := q.Completed(l); done != 2 || total != 3 {
		t.Errorf("read back %d/%d, want 2/3", done, total)
	}
	if q.Current("raft") != "three" || q.Current("other") != "" {
		t.Errorf("current %q", q.Current("raft"))
	}
	// A step removed from the lesson no longer counts.
	l.Steps = l.Steps[1:]
	if done, total := q.Completed(l); done != 1 || total != 2 {
		t.Errorf("after a step was removed: %d/%d, want 1/2", done, total)
	}

	if err := q.Reset("raft"); err != nil {
		t.Fatal(err)
	}
	r, err := OpenProgress(path)
	if err != nil {
		t.Fatal(err)
	}
	if r.Done("raft", "two") || r.Current("raft") != "" {
		t.Error("reset did not forget the lesson")
	}
	assertNoTempFiles(t, filepath.Dir(path))
}

// TestProgressOfTwoProcesses: the TUI and klab lessons in another terminal
// each hold a Progress on the same file; neither loses the other's steps.
func TestProgressOfTwoProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), ProgressFile)
	a, err := OpenProgress(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenProgress(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Complete("raft", "one"); err != nil {
		t.Fatal(err)
	}
	if err := b.Complete("quorum", "one-down"); err != nil {
		t.Fatal(err)
	}
	c, err := OpenProgress(path)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Done("raft", "one") || !c.Done("quorum", "one-down") {
		t.Error("one process's step was lost")
	}
	if !b.Done("raft", "one") {
		t.Error("b does not see a's step after writing")
	}
}

func TestProgressLeavesABadFileAlone(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ProgressFile)
	bad := []byte("{not json")
	if err := os.WriteFile(path, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenProgress(path); !errors.Is(err, ErrProgressCorrupt) {
		t.Fatalf("error %v, want ErrProgressCorrupt", err)
	}
	if got, _ := os.ReadFile(path); string(got) != string(bad) {
		t.Error("the unreadable file was changed")
	}
	if err := ResetAll(path); err != nil {
		t.Fatal(err)
	}
	if p, err := OpenProgress(path); err != nil || p.Done("raft", "one") {
		t.Errorf("after ResetAll: %v", err)
	}

	newer := []byte(`{"version": 2, "lessons": {}}`)
	if err := os.WriteFile(path, newer, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenProgress(path); err == nil {
		t.Fatal("a file from a newer klab was accepted")
	}
	if got, _ := os.ReadFile(path); string(got) != string(newer) {
		t.Error("a newer klab's file was changed")
	}
}

func TestProgressWriteFailure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "klab")
	p, err := OpenProgress(filepath.Join(dir, ProgressFile))
	if err != nil {
		t.Fatal(err)
	}
	// A file where the folder should be: the folder cannot be made.
	if err := os.WriteFile(dir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.Complete("raft", "one"); err == nil {
		t.Fatal("Complete succeeded without a folder")
	}
	if p.Done("raft", "one") {
		t.Error("a step that was not saved counts as done")
	}
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != ProgressFile {
			t.Errorf("file %s left behind", e.Name())
		}
	}
}

// TestProgressKeepsAnswers keeps the predictions a student made, across
// processes, a later answer replacing an earlier one.
func TestProgressKeepsAnswers(t *testing.T) {
	path := filepath.Join(t.TempDir(), ProgressFile)
	p, err := OpenProgress(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Answer("quorum", "partition"); ok {
		t.Error("an answer before any was given")
	}
	if err := p.SetAnswer("quorum", "partition", 2); err != nil {
		t.Fatal(err)
	}
	if err := p.SetAnswer("quorum", "partition", 1); err != nil {
		t.Fatal(err)
	}
	again, err := OpenProgress(path)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := again.Answer("quorum", "partition"); !ok || c != 1 {
		t.Errorf("answer read back: %d, %v; want 1", c, ok)
	}
	if err := again.Complete("quorum", "partition"); err != nil {
		t.Fatal(err)
	}
	if c, ok := again.Answer("quorum", "partition"); !ok || c != 1 {
		t.Errorf("completing the step lost the answer: %d, %v", c, ok)
	}
}

// TestResumeAt: a lesson opens where the student left it, at the start
// when they never began it, and at the start again once they finished it.
func TestResumeAt(t *testing.T) {
	p, err := OpenProgress(filepath.Join(t.TempDir(), ProgressFile))
	if err != nil {
		t.Fatal(err)
	}
	l := testLesson()
	var none *Progress
	if got := none.ResumeAt(l); got != 0 {
		t.Errorf("without progress: step %d, want 0", got)
	}
	if got := p.ResumeAt(l); got != 0 {
		t.Errorf("never begun: step %d, want 0", got)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(p.Complete("raft", "one"))
	must(p.SetCurrent("raft", "two"))
	if got := p.ResumeAt(l); got != 1 {
		t.Errorf("left at two: step %d, want 1", got)
	}
	// On the last step, not yet done: that is where they are.
	must(p.Complete("raft", "two"))
	must(p.SetCurrent("raft", "three"))
	if got := p.ResumeAt(l); got != 2 {
		t.Errorf("on the last step, unfinished: step %d, want 2", got)
	}
	must(p.Complete("raft", "three"))
	if got := p.ResumeAt(l); got != 0 {
		t.Errorf("finished: step %d, want 0 (the start)", got)
	}
	// A step the lesson no longer has: the start.
	must(p.SetCurrent("raft", "gone"))
	if got := p.ResumeAt(l); got != 0 {
		t.Errorf("current step removed: step %d, want 0", got)
	}
}
