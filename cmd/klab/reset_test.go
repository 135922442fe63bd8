package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/lessons"
)

// klab reset says what is wrong, in both languages, before it stops
// anything: no step named, no lesson known, a step the lesson lacks (its
// steps listed), a step with no snapshot yet, a cluster that is not running.
func TestResetErrors(t *testing.T) {
	testHome(t)
	all, err := lessons.Embedded()
	if err != nil || len(all) == 0 {
		t.Fatalf("embedded lessons: %v", err)
	}
	l := all[0]
	ids := l.StepList()
	step := l.Steps[0].ID

	// A stopped local cluster: its cluster.json, no process on its socket.
	dir, err := lab.StateDir("stopped")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(lab.Info{Version: 1, Name: "stopped", Runtime: lab.RuntimeLocal})
	if err := os.WriteFile(filepath.Join(dir, lab.InfoFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := lab.WriteLessonPosition("stopped", lab.LessonPosition{Lesson: l.ID, Step: step}); err != nil {
		t.Fatal(err)
	}
	snap, err := lab.StepSnapshotPath("stopped", l.ID, l.Steps[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(snap), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(snap, []byte("a snapshot"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		args []string
		want map[i18n.Lang][]string
	}{
		{"no step", []string{"reset", "--name", "stopped"}, map[i18n.Lang][]string{
			i18n.English: {"--step <id>"}, i18n.Korean: {"--step <id>"}}},
		{"no lesson shown", []string{"reset", "--step", step, "--name", "ghost"}, map[i18n.Lang][]string{
			i18n.English: {"no workspace has shown a lesson on cluster ghost", "--lesson <id>"}, i18n.Korean: {"ghost", "--lesson <id>"}}},
		{"unknown step", []string{"reset", "--step", "nope", "--name", "stopped"}, map[i18n.Lang][]string{
			i18n.English: {`lesson ` + l.ID + ` has no step "nope"`, ids}, i18n.Korean: {l.ID, `"nope"`, ids}}},
		{"no snapshot", []string{"reset", "--step", step, "--name", "stopped"}, map[i18n.Lang][]string{
			i18n.English: {"no snapshot of step", step, "klab --lesson " + l.ID + "/" + step + " --name stopped"}, i18n.Korean: {"스냅샷이 아직 없습니다", step}}},
		{"not running", []string{"reset", "--step", l.Steps[1].ID, "--lesson", l.ID, "--name", "stopped"}, map[i18n.Lang][]string{
			i18n.English: {`"stopped" is not running`}, i18n.Korean: {"실행 중이 아닙니다"}}},
		// A step by the number the workspace shows is the same step.
		{"no snapshot, by number", []string{"reset", "--step", "1", "--name", "stopped"}, map[i18n.Lang][]string{
			i18n.English: {"no snapshot of step", step}, i18n.Korean: {"스냅샷이 아직 없습니다", step}}},
		{"not running, by number", []string{"reset", "--step", "2", "--lesson", l.ID, "--name", "stopped"}, map[i18n.Lang][]string{
			i18n.English: {`"stopped" is not running`}, i18n.Korean: {"실행 중이 아닙니다"}}},
		{"number past the last step", []string{"reset", "--step", fmt.Sprint(len(l.Steps) + 1), "--name", "stopped"}, map[i18n.Lang][]string{
			i18n.English: {fmt.Sprintf(`has no step "%d"`, len(l.Steps)+1), ids}, i18n.Korean: {ids}}},
	}
	for _, lang := range []i18n.Lang{i18n.English, i18n.Korean} {
		for _, tt := range tests {
			t.Run(string(lang)+"/"+tt.name, func(t *testing.T) {
				i18n.SetLang(lang)
				defer i18n.SetLang(i18n.English)
				code, _, stderr := klab(t, tt.args...)
				if code == 0 {
					t.Fatalf("klab %v succeeded; want an error", tt.args)
				}
				for _, w := range tt.want[lang] {
					if !strings.Contains(stderr, w) {
						t.Errorf("stderr %q lacks %q", stderr, w)
					}
				}
			})
		}
	}
}
