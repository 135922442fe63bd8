package lessons

import (
	"fmt"
	"strings"
	"testing"
	"unicode"

	"github.com/klab-dev/klab/assets/i18n"
)

// TestEmbeddedLessonsLoad requires the lessons shipped in klab to load
// without a single problem, and to be the curriculum's first topics.
func TestEmbeddedLessonsLoad(t *testing.T) {
	lessons, err := Embedded()
	for _, e := range LoadErrors(err) {
		t.Errorf("%s", e.In(i18n.English))
	}
	if err != nil && len(LoadErrors(err)) == 0 {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range lessons {
		ids = append(ids, l.ID)
	}
	want := []string{"cluster-tour", "api-server", "etcd-registry", "raft-election", "quorum", "scheduler", "controllers", "node-failure", "kubelet", "kube-proxy", "ha-control-plane", "namespaces"}
	if len(ids) != len(want) {
		t.Fatalf("lessons %v, want %v", ids, want)
	}
	for i := range want {
		if ids[i] != want[i] {
			t.Fatalf("lessons %v, want %v (in order)", ids, want)
		}
	}
}

// TestEmbeddedSolutionsFitTheirChecks checks, without a cluster, what can
// be checked of each solution: a step that waits for a command has it in
// its solution, and a step that waits for a key or a refused write writes
// that key. `klab lessons check` runs the rest against a real cluster.
func TestEmbeddedSolutionsFitTheirChecks(t *testing.T) {
	lessons, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lessons {
		for _, s := range l.Steps {
			var solution [][]string
			for _, c := range s.Solution {
				args, err := c.Args()
				if err != nil {
					t.Fatalf("%s/%s: %v", l.ID, s.ID, err)
				}
				solution = append(solution, args)
			}
			for _, c := range flatten(s.Check) {
				if !solutionFits(c, solution) {
					t.Errorf("%s/%s: no solution command for %s %+v", l.ID, s.ID, c.Kind(), c)
				}
			}
		}
	}
}

func flatten(c Check) []Check {
	if any, ok := c.(AnyCheck); ok {
		c = AllCheck(any)
	}
	if all, ok := c.(AllCheck); ok {
		var out []Check
		for _, sub := range all.Checks {
			out = append(out, flatten(sub)...)
		}
		return out
	}
	return []Check{c}
}

func solutionFits(c Check, solution [][]string) bool {
	switch c := c.(type) {
	case CommandSucceededCheck:
		for _, args := range solution {
			if matchCommand(c.words, args) {
				return true
			}
		}
		return false
	case KeyExistsCheck:
		for _, args := range solution {
			verb, key, ok := etcdWrite(args)
			if ok && verb == "put" && key == c.Key {
				words := withoutKlab(args)
				return c.Value == nil || words[len(words)-1] == *c.Value
			}
			// Objects under /registry are written by the API server.
			if strings.HasPrefix(c.Key, "/registry/") && len(args) > 2 && args[1] == "kubectl" && (args[2] == "create" || args[2] == "apply") {
				return true
			}
		}
		return false
	case WriteRefusedCheck:
		for _, args := range solution {
			if verb, key, ok := etcdWrite(args); ok && (c.Key == "" || verb == "put" && key == c.Key) {
				return true
			}
		}
		return false
	}
	return true
}

// TestEmbeddedLanguages catches a text written in the wrong language, or
// the two swapped.
func TestEmbeddedLanguages(t *testing.T) {
	lessons, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	check := func(where string, b Bilingual) {
		if !hasHangul(b.Korean) {
			t.Errorf("%s: the Korean text has no Korean in it: %q", where, b.Korean)
		}
		if hasHangul(b.English) {
			t.Errorf("%s: the English text has Korean in it: %q", where, b.English)
		}
	}
	for _, l := range lessons {
		check(l.ID+" title", l.Title)
		check(l.ID+" summary", l.Summary)
		for _, s := range l.Steps {
			check(l.ID+"/"+s.ID+" title", s.Title)
			check(l.ID+"/"+s.ID+" body", s.Body)
			for i, h := range s.Hints {
				check(fmt.Sprintf("%s/%s hint %d", l.ID, s.ID, i), h)
			}
		}
	}
}

func hasHangul(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Hangul, r) {
			return true
		}
	}
	return false
}

// TestEmbeddedFrames requires every built-in lesson to say what it
// teaches, for how long and at what level, and what to read next, and its
// prerequisites to come before it.
func TestEmbeddedFrames(t *testing.T) {
	all, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	order := map[string]int{}
	for _, l := range all {
		order[l.ID] = l.Order
	}
	for _, l := range all {
		f := l.Frame
		if len(f.Objectives) == 0 || f.Minutes == 0 || f.Level == "" || f.Recap == (Bilingual{}) || len(f.ReadNext) == 0 {
			t.Errorf("%s: incomplete frame %+v", l.ID, f)
		}
		for _, p := range f.Prerequisites {
			if order[p] >= l.Order {
				t.Errorf("%s: prerequisite %s does not come before it", l.ID, p)
			}
		}
	}
}

// The pane names a lesson's prerequisites by their titles, which only the
// loader, seeing every lesson, can give it.
func TestPrerequisiteTitles(t *testing.T) {
	all, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	titles := map[string]Bilingual{}
	for _, l := range all {
		titles[l.ID] = l.Title
	}
	for _, l := range all {
		f := l.Frame
		if len(f.PrerequisiteTitles) != len(f.Prerequisites) {
			t.Errorf("%s: %d prerequisite titles for %d prerequisites", l.ID, len(f.PrerequisiteTitles), len(f.Prerequisites))
			continue
		}
		for i, id := range f.Prerequisites {
			if f.PrerequisiteTitles[i] != titles[id] {
				t.Errorf("%s: prerequisite %s titled %v, want %v", l.ID, id, f.PrerequisiteTitles[i], titles[id])
			}
		}
	}
}
