package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/internal/testenv"
	"github.com/klab-dev/klab/lessons"
)

// TestLessonsNew: the skeleton loads as written, names the id everywhere
// it appears, is never written over, and refuses an id that is not one;
// on a real cluster its one step passes with its solution and not
// without (klab lessons check).
func TestLessonsNew(t *testing.T) {
	testHome(t)
	i18n.SetLang(i18n.English)
	dir := filepath.Join(t.TempDir(), "pack")
	code, stdout, stderr := klab(t, "lessons", "new", "my-lesson", "--dir", dir)
	if code != 0 {
		t.Fatalf("lessons new exited %d: %s", code, stderr)
	}
	path := filepath.Join(dir, "my-lesson.yaml")
	if !strings.Contains(stdout, "Wrote "+path) {
		t.Errorf("stdout %q does not say where the lesson went", stdout)
	}
	ls, err := lessons.LoadDir(dir)
	if err != nil {
		t.Fatalf("the skeleton does not load: %v", err)
	}
	if len(ls) != 1 || ls[0].ID != "my-lesson" || ls[0].Frame.Minutes == 0 || len(ls[0].Steps) != 1 || ls[0].Steps[0].Check == nil || len(ls[0].Steps[0].Solution) == 0 {
		t.Fatalf("skeleton = %+v", ls)
	}
	before, _ := os.ReadFile(path)
	code, _, stderr = klab(t, "lessons", "new", "my-lesson", "--dir", dir)
	if after, _ := os.ReadFile(path); code != 1 || !strings.Contains(stderr, "exists already") || string(after) != string(before) {
		t.Errorf("a second new: exit %d, stderr %q, file changed %v", code, stderr, string(after) != string(before))
	}
	code, _, stderr = klab(t, "lessons", "new", "My_Lesson", "--dir", dir)
	if code != 1 || !strings.Contains(stderr, `"My_Lesson" cannot be a lesson id`) {
		t.Errorf("a bad id: exit %d, stderr %q", code, stderr)
	}

	testenv.EndToEnd(t)
	t.Setenv("KUBECONFIG", "")
	t.Setenv("ETCDCTL_ENDPOINTS", "")
	// etcdctl runs as a child process of this binary, which TestMain
	// turns into klab.
	t.Setenv("KLAB_TEST_MAIN", "1")
	code, stdout, stderr = klab(t, "lessons", "check", "--dir", dir, "--runtime", "local")
	if code != 0 || !strings.Contains(stdout, "passed, 1 step (") {
		t.Fatalf("klab lessons check of the skeleton exited %d:\n%s\n%s", code, stdout, stderr)
	}
}
