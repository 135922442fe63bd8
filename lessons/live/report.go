package live

import (
	"fmt"
	"time"

	"github.com/klab-dev/klab/lessons"
)

// Report is what CheckLesson found.
type Report struct {
	Lesson *lessons.Lesson
	// Steps has one result per step, in order, for every step reached.
	Steps []StepResult
	// Duration is the whole check's, clusters started and removed
	// included.
	Duration time.Duration
}

// Passed reports whether every step of the lesson passed.
func (r *Report) Passed() bool {
	if len(r.Steps) != len(r.Lesson.Steps) {
		return false
	}
	for _, s := range r.Steps {
		if s.Outcome != StepPassed {
			return false
		}
	}
	return true
}

// Count returns how many steps had the outcome.
func (r *Report) Count(o Outcome) int {
	n := 0
	for _, s := range r.Steps {
		if s.Outcome == o {
			n++
		}
	}
	return n
}

// Outcome is how a step ended.
type Outcome int

// Step outcomes.
const (
	StepPassed Outcome = iota
	StepFailed
	// StepSkipped is a step after one that failed: it would start from a
	// cluster the lesson did not expect, so it is not judged.
	StepSkipped
	// StepNoAct is a step whose check passed before its solution ran: a
	// student would pass it without doing what it teaches. A step marked
	// observe (watching is the act) is exempt.
	StepNoAct
)

// StepResult is one step's result.
type StepResult struct {
	// Lesson is the lesson's ID, Index the step's position in it.
	Lesson string
	Index  int
	Step   *lessons.Step
	// Outcome says whether the step passed.
	Outcome Outcome
	// Duration is the step's, from its beginning to its verdict; Setup
	// is what bringing the cluster to the step's shape took before that.
	Duration time.Duration
	Setup    time.Duration
	// Verdict is the check's last verdict; Reasons is its text in English.
	Verdict lessons.Verdict
	Reasons string
	// Commands are the solution's commands as they ran.
	Commands []CommandResult
}

// CommandResult is one command of a solution.
type CommandResult struct {
	Command lessons.Command
	// Err is nil when the command succeeded.
	Err error
	// Output is what it printed, standard error included.
	Output   string
	Duration time.Duration
}

// String renders an outcome for logs.
func (o Outcome) String() string {
	switch o {
	case StepPassed:
		return "passed"
	case StepFailed:
		return "failed"
	case StepSkipped:
		return "skipped"
	case StepNoAct:
		return "passed without its act"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}
