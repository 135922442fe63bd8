package ui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/lessons"
)

const packLesson = `id: %s
order: 500
title: {ko: 팩 레슨, en: A pack lesson}
summary: {ko: 요약, en: Summary}
cluster: {masters: 1, workers: 1}
steps:
  - id: put
    title: {ko: 쓰기, en: Write}
    body: {ko: 본문, en: Body}
    check:
      key-exists: {key: /klab/pack}
    solution: [klab etcdctl put /klab/pack yes]
`

func writePack(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestLessonPack: a pack's lessons come after the built-in ones; a pack
// with a broken file, or an id a built-in lesson has, adds none of its
// lessons and says why at the file (and line); a folder that is not there
// is an error.
func TestLessonPack(t *testing.T) {
	i18n.SetLang(i18n.English)
	builtin, err := lessons.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	good := writePack(t, map[string]string{"mine.yaml": strings.Replace(packLesson, "%s", "my-lesson", 1)})
	pack, problems, err := loadPack(builtin, good)
	if err != nil || len(problems) != 0 || len(pack) != 1 || pack[0].ID != "my-lesson" {
		t.Fatalf("good pack: %d lessons, problems %v, err %v", len(pack), problems, err)
	}

	broken := writePack(t, map[string]string{
		"mine.yaml":   strings.Replace(packLesson, "%s", "my-lesson", 1),
		"broken.yaml": strings.Replace(strings.Replace(packLesson, "%s", "other", 1), "title: {ko: 쓰기, en: Write}", "title: {en: Write}", 1),
	})
	pack, problems, err = loadPack(builtin, broken)
	if err != nil || len(pack) != 0 || len(problems) != 1 {
		t.Fatalf("broken pack: %d lessons, problems %v, err %v", len(pack), problems, err)
	}
	if got := problems[0].In(i18n.English); !strings.Contains(got, "broken.yaml:8:") || !strings.Contains(got, "missing Korean") {
		t.Errorf("problem = %q, want broken.yaml's line 8 and what is missing", got)
	}

	taken := writePack(t, map[string]string{"tour.yaml": strings.Replace(packLesson, "%s", builtin[0].ID, 1)})
	pack, problems, err = loadPack(builtin, taken)
	if err != nil || len(pack) != 0 || len(problems) != 1 || !strings.Contains(problems[0].In(i18n.English), "already has the id \""+builtin[0].ID+"\"") {
		t.Fatalf("pack reusing a built-in id: %d lessons, problems %v, err %v", len(pack), problems, err)
	}

	if _, _, err := loadPack(builtin, filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Error("a folder that does not exist loaded")
	}

	// Options take the pack after the built-in lessons, and the home
	// screen says what is wrong with a broken one.
	o := Options{Pack: good}
	testHome(t)
	if err := o.prepare(); err != nil {
		t.Fatal(err)
	}
	if n := len(o.Lessons); n != len(builtin)+1 || o.Lessons[n-1].ID != "my-lesson" {
		t.Errorf("lessons with the pack: %d, last %s", n, o.Lessons[n-1].ID)
	}
}
