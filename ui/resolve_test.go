package ui

import (
	"strings"
	"testing"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/lessons"
)

// TestResolveLesson: --lesson names a lesson, and a step by its id or by
// the number the workspace shows; a step the lesson lacks is refused with
// the steps it has.
func TestResolveLesson(t *testing.T) {
	i18n.SetLang(i18n.English)
	all, err := lessons.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	var raft *lessons.Lesson
	for _, l := range all {
		if l.ID == "raft-election" {
			raft = l
		}
	}
	if raft == nil || len(raft.Steps) < 3 {
		t.Fatal("no raft-election lesson with three steps or more")
	}
	third := raft.Steps[2].ID
	for _, tt := range []struct {
		ref      string
		wantStep int
	}{{"raft-election", -1}, {"raft-election/" + third, 2}, {"raft-election/3", 2}, {"raft-election/1", 0}} {
		l, step, err := ResolveLesson(all, tt.ref)
		if err != nil || l != raft || step != tt.wantStep {
			t.Errorf("ResolveLesson(%q) = %v, %d, %v; want raft-election, step %d", tt.ref, l, step, err, tt.wantStep)
		}
	}
	for _, ref := range []string{"raft-election/0", "raft-election/99", "raft-election/nope"} {
		_, _, err := ResolveLesson(all, ref)
		if err == nil || !strings.Contains(err.Error(), "3 "+third) {
			t.Errorf("ResolveLesson(%q) = %v; want an error listing the steps by number and id", ref, err)
		}
	}
	if _, _, err := ResolveLesson(all, "no-such-lesson"); err == nil || !strings.Contains(err.Error(), "raft-election") {
		t.Errorf("unknown lesson: %v; want an error listing the lessons", err)
	}
}
