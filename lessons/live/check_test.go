package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/internal/testenv"
	"github.com/klab-dev/klab/lessons"
)

// testRunner runs the few commands the test lesson uses, through cluster/lab
// and clientv3 as klab's own commands do. It checks that every command was
// aimed at the cluster named.
func testRunner(t *testing.T, name string) Runner {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if len(args) < 3 || args[2] != "--name="+name {
			t.Errorf("command %q is not aimed at cluster %s", args, name)
			return errors.New("no --name")
		}
		words := append(args[1:2:2], args[3:]...)
		switch {
		case len(words) == 4 && words[0] == "etcdctl" && words[1] == "put":
			info, err := lab.LoadInfo(name)
			if err != nil {
				return err
			}
			cli, err := info.EtcdClient()
			if err != nil {
				return err
			}
			defer cli.Close()
			if _, err := cli.Put(ctx, words[2], words[3]); err != nil {
				fmt.Fprintln(stderr, "Error:", err)
				return err
			}
			fmt.Fprintln(stdout, "OK")
			return nil
		case len(words) == 3 && words[0] == "chaos":
			res, err := lab.Chaos(ctx, name, lab.ChaosRequest{Op: lab.ChaosOp(words[1]), Targets: []string{words[2]}})
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, res.Targets)
			return nil
		case len(words) == 1 && words[0] == "status":
			st, err := lab.Status(ctx, name)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, "leader:", st.Leader)
			return nil
		}
		return fmt.Errorf("test runner: unknown command %q", args)
	}
}

func TestCheckLesson(t *testing.T) {
	testenv.EndToEnd(t)
	all, err := lessons.LoadDir("testdata/lessons")
	if err != nil {
		t.Fatal(err)
	}
	l := all[0]
	const name = "live-check"
	var progress []StepResult
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := CheckLesson(ctx, l, CheckOptions{
		Runtime:     lab.RuntimeLocal,
		Name:        name,
		Runner:      testRunner(t, name),
		StepTimeout: 10 * time.Second,
		Progress:    func(r StepResult) { progress = append(progress, r) },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id      string
		outcome Outcome
		reason  string
	}{
		{"write", StepPassed, `key /live/check holds "hello"`},
		{"election", StepPassed, "took over from"},
		{"reshape", StepPassed, "master-1 leads in term"},
		{"free", StepNoAct, "master-1 leads in term"},
		{"watch", StepPassed, "master-1 leads in term"},
		{"never", StepFailed, "key /live/never does not exist yet"},
		{"after", StepSkipped, ""},
	}
	if len(rep.Steps) != len(want) || len(progress) != len(want) {
		t.Fatalf("%d steps reported, %d in progress; want %d", len(rep.Steps), len(progress), len(want))
	}
	for i, w := range want {
		got := rep.Steps[i]
		if got.Step.ID != w.id || got.Index != i || got.Lesson != l.ID || got.Outcome != w.outcome || !strings.Contains(got.Reasons, w.reason) {
			t.Errorf("step %d: %s %v %q; want %s %v with %q", i, got.Step.ID, got.Outcome, got.Reasons, w.id, w.outcome, w.reason)
		}
		if progress[i].Step != got.Step || progress[i].Outcome != got.Outcome {
			t.Errorf("step %d: progress said %s %v", i, progress[i].Step.ID, progress[i].Outcome)
		}
	}
	if rep.Passed() || rep.Count(StepPassed) != 4 || rep.Count(StepFailed) != 1 || rep.Count(StepNoAct) != 1 || rep.Count(StepSkipped) != 1 {
		t.Errorf("report passed=%v, counts %d/%d/%d/%d", rep.Passed(), rep.Count(StepPassed), rep.Count(StepFailed), rep.Count(StepNoAct), rep.Count(StepSkipped))
	}
	// The step that passed without its act still ran its solution.
	if cmds := rep.Steps[3].Commands; len(cmds) != 1 {
		t.Errorf("the step without its act ran %d commands, want its solution's 1", len(cmds))
	}
	// The new shape was started before its step, not in it.
	if rep.Steps[2].Setup < 100*time.Millisecond || rep.Steps[1].Setup != 0 {
		t.Errorf("setup times %v, %v; want the reshape's before step 3 only", rep.Steps[1].Setup, rep.Steps[2].Setup)
	}
	// The failed step waited for its check as long as it was allowed.
	if d := rep.Steps[5].Duration; d < 10*time.Second {
		t.Errorf("the failing step gave up after %v, before its 10s", d)
	}
	if cmds := rep.Steps[5].Commands; len(cmds) != 1 || cmds[0].Err != nil || strings.TrimSpace(cmds[0].Output) != "OK" {
		t.Errorf("the failing step's commands: %+v", cmds)
	}
	// Nothing is left of the cluster.
	dir, _ := lab.StateDir(name)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("state dir %s still there after the check (%v)", dir, err)
	}
}

func TestCheckLessonWantsAFreshCluster(t *testing.T) {
	all, err := lessons.LoadDir("testdata/lessons")
	if err != nil {
		t.Fatal(err)
	}
	const name = "live-taken"
	dir, _ := lab.StateDir(name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	_, err = CheckLesson(context.Background(), all[0], CheckOptions{Runtime: lab.RuntimeLocal, Name: name, Runner: testRunner(t, name)})
	if err == nil || !strings.Contains(err.Error(), `cluster "live-taken" already exists`) {
		t.Fatalf("CheckLesson on a taken name: %v", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("the existing cluster's dir was touched: %v", err)
	}
}
