package ui

import (
	"fmt"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestReshapeFlow follows the quorum lesson from a step on three members
// on to the step that runs on two: the workspace offers to recreate the
// cluster, removes it, starts one of two members under the same name
// (showing its creation steps), and opens again on that step.
func TestReshapeFlow(t *testing.T) {
	testenv.EndToEnd(t)
	name, opts := flowOptions(t, "reshape", func(_ string, o *Options) { o.Lesson = "quorum/heal" })
	l := opts.lesson
	two, at := l.Step("two-members")
	if two == nil || at != opts.step+1 || two.Cluster == nil || two.Cluster.Masters != 2 {
		t.Fatalf("the quorum lesson no longer has heal followed by two-members on 2 masters")
	}
	f := newFlow(t, opts, 120, 40)

	f.waitFor("the lesson's cluster of 3 masters", 0, 90*time.Second,
		allOf("Starting cluster "+name+" with 3 masters", "Step "+fmt.Sprint(opts.step+1), "★ leader master-"))

	mark := f.press("n")
	f.waitFor("the offer to recreate", mark, 5*time.Second,
		allOf("This step runs on a cluster of another", "enter  recreate it (masters: 2, workers: 1)", "enter recreate"))
	// Not now: the status line still says what the step needs (it was
	// drawn with the offer), and going back and on again offers it once
	// more.
	f.press("esc")
	f.waitFor("the step's need in the status line", mark, 5*time.Second, allOf("go back a step and on again (N, n)"))
	// One key at a time: back on the previous step first, then on again.
	mark = f.press("N")
	f.waitFor("the previous step", mark, 5*time.Second, allOf(fmt.Sprintf("Step %d/%d", at, len(l.Steps))))
	mark = f.press("n")
	f.waitFor("the offer again", mark, 5*time.Second, allOf("enter  recreate it (masters: 2, workers: 1)"))

	mark = f.press("enter")
	f.waitFor("the new cluster's creation steps", mark, 90*time.Second,
		allOf("Starting cluster "+name+" with 2 masters", "✓ Creating the nodes (3, local runtime)"))
	f.waitFor("the workspace on the step, with a leader", mark, 90*time.Second,
		allOf(two.Title.English, fmt.Sprintf("Step %d/%d", at+1, len(l.Steps)), "★ leader master-"))

	info, err := lab.LoadInfo(name)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Members) != 2 || info.Spec.Masters != 2 || info.Spec.Workers != 1 {
		t.Errorf("the new cluster has %d members (spec %d masters, %d workers), want 2 (2, 1)",
			len(info.Members), info.Spec.Masters, info.Spec.Workers)
	}

	mark = f.press("q")
	f.waitFor("the quit dialog", mark, 5*time.Second, allOf("Quit klab?"))
	f.press("r")
	f.finish()
	final := f.tm.FinalModel(t).(*Model)
	if closed, err := final.ws.Closed(); !closed || err != nil {
		t.Errorf("cluster closed = %v, err %v", closed, err)
	}
	if _, err := lab.LoadInfo(name); err == nil {
		t.Errorf("cluster %s is still there after r (remove)", name)
	}
}
