package lessons_test

import (
	"fmt"

	"github.com/klab-dev/klab/lessons"
)

// The integrator feeds one Evaluator everything it observes, and calls
// Begin when a step begins.
func ExampleEvaluator() {
	all, err := lessons.Embedded()
	if err != nil {
		panic(err)
	}
	var raft *lessons.Lesson
	for _, l := range all {
		if l.ID == "raft-election" {
			raft = l
		}
	}
	step, _ := raft.Step("tick-by-tick")

	e := lessons.NewEvaluator()
	// What the Observer reported before the step began.
	for _, m := range []string{"master-1", "master-2", "master-3"} {
		e.Observe(lessons.MemberObserved{Member: m, State: lessons.MemberFollower, Term: 4, Leader: "master-1"})
	}
	e.Observe(lessons.MemberObserved{Member: "master-1", State: lessons.MemberLeader, Term: 4, Leader: "master-1"})

	v := e.Begin(step.Check)
	fmt.Println("at the start:", v.Passed)

	// The student pauses the clock, kills the leader and steps the
	// clock; master-2 runs an election and wins.
	for _, o := range []lessons.Observation{
		lessons.CommandObserved{Args: []string{"klab", "clock", "pause"}},
		lessons.CommandObserved{Args: []string{"klab", "chaos", "kill", "leader"}},
		lessons.CommandObserved{Args: []string{"klab", "clock", "step", "5"}},
		lessons.MemberObserved{Member: "master-1", State: lessons.MemberUnreachable},
		lessons.MemberObserved{Member: "master-2", State: lessons.MemberPreCandidate, Term: 4},
		lessons.MessageObserved{From: "master-2", To: "master-3", Type: "MsgPreVote", Term: 5},
		lessons.MemberObserved{Member: "master-2", State: lessons.MemberCandidate, Term: 5},
		lessons.MessageObserved{From: "master-2", To: "master-3", Type: "MsgVote", Term: 5},
		lessons.MemberObserved{Member: "master-2", State: lessons.MemberLeader, Term: 5, Leader: "master-2"},
	} {
		if v, changed := e.Observe(o); changed && v.Passed {
			fmt.Printf("passed after %T\n", o)
		}
	}
	// Output:
	// at the start: false
	// passed after lessons.MemberObserved
}
