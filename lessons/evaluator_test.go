package lessons

import (
	"testing"
)

func TestEvaluatorLatchesAPass(t *testing.T) {
	e := NewEvaluator()
	for _, o := range healthy {
		e.Observe(o)
	}
	if v := e.Begin(mustCheck(t, "member-state: {member: master-3, state: down}")); v.Passed {
		t.Fatal("passed before master-3 went down")
	}
	v, changed := e.Observe(member("master-3", MemberUnreachable, 0, ""))
	if !v.Passed || !changed {
		t.Fatalf("after master-3 went down: passed %v, changed %v", v.Passed, changed)
	}
	// The student did what the step asked; bringing the member back does
	// not take the step away.
	v, changed = e.Observe(member("master-3", MemberFollower, 2, "master-1"))
	if !v.Passed || changed {
		t.Errorf("after master-3 came back: passed %v, changed %v", v.Passed, changed)
	}
}

func TestEvaluatorReportsChangesOnly(t *testing.T) {
	e := NewEvaluator()
	e.Begin(mustCheck(t, "members-running: {count: 3}"))
	if _, changed := e.Observe(healthy[0]); !changed {
		t.Error("1 of 1 running after 0 of 0: no change reported")
	}
	// Observations the check does not read change nothing.
	for _, o := range []Observation{msg("MsgApp"), node("worker-1", true), KeyObserved{Key: "/a"}, ran(nil, "", "klab", "status")} {
		if _, changed := e.Observe(o); changed {
			t.Errorf("%T changed the verdict", o)
		}
	}
	// The same member state again reads the same.
	if _, changed := e.Observe(healthy[0]); changed {
		t.Error("an unchanged member changed the verdict")
	}
	if _, changed := e.Observe(healthy[1]); !changed {
		t.Error("2 of 2 running: no change reported")
	}
	if v, _ := e.Observe(healthy[2]); !v.Passed {
		t.Error("3 running, not passed")
	}
}

func TestEvaluatorCountsCommandsPerStep(t *testing.T) {
	e := NewEvaluator()
	check := mustCheck(t, "command-succeeded: {command: klab status}")
	e.Begin(check)
	if v, _ := e.Observe(ran(nil, "", "klab", "status")); !v.Passed {
		t.Fatal("klab status did not pass")
	}
	// The next step asks for the same command: the one run in the
	// previous step does not count.
	if v := e.Begin(check); v.Passed {
		t.Error("a command of the previous step counted")
	}
	if len(e.now.commands) != 0 {
		t.Errorf("%d commands kept after Begin", len(e.now.commands))
	}
}

func TestEvaluatorWithoutCheck(t *testing.T) {
	e := NewEvaluator()
	if v, changed := e.Observe(healthy[0]); v.Passed || changed || e.Check() != nil {
		t.Errorf("judged without a check: %+v, %v", v, changed)
	}
	if v := e.Begin(nil); v.Passed {
		t.Error("a nil check passed")
	}
}

// TestWorldCopiesWhatItKeeps makes sure a caller reusing its label map or
// argument slice does not change what was observed.
func TestWorldCopiesWhatItKeeps(t *testing.T) {
	e := NewEvaluator()
	e.Begin(mustCheck(t, "pods-running: {selector: app=web, count: 1}"))
	labels := map[string]string{"app": "db"}
	e.Observe(pod("p", "worker-1", "Running", labels))
	labels["app"] = "web"
	if e.Verdict().Passed {
		t.Error("a label changed after the observation counted")
	}
	args := []string{"klab", "status"}
	e.Begin(mustCheck(t, "command-succeeded: {command: klab status}"))
	e.Observe(CommandObserved{Args: args, Err: errExit})
	args[1] = "statuz"
	if e.now.commands[0].Args[1] != "status" {
		t.Error("the command's arguments were not copied")
	}
}

func TestMemberStateOf(t *testing.T) {
	cases := map[string]MemberState{
		"StateLeader": MemberLeader, "StateFollower": MemberFollower, "StateCandidate": MemberCandidate,
		"StatePreCandidate": MemberPreCandidate, "stopped": MemberStopped, "killed": MemberStopped,
		"paused": MemberPaused, "pre-candidate": MemberPreCandidate, "leader": MemberLeader,
	}
	for in, want := range cases {
		if got, ok := MemberStateOf(in); !ok || got != want {
			t.Errorf("MemberStateOf(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if _, ok := MemberStateOf("StateBogus"); ok {
		t.Error("an unknown state was accepted")
	}
}
