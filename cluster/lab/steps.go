package lab

import (
	"time"

	"github.com/klab-dev/klab/assets/i18n"
)

// Phase is where a step is: started, then done or failed.
type Phase int

// Step phases.
const (
	StepStarted Phase = iota
	StepDone
	StepFailed
)

// StepEvent reports progress of a long operation (Up, Close) one step at a
// time, as kind's status lines do: the CLI prints them with ✓ and ✗, the
// TUI turns them into messages.
type StepEvent struct {
	// Title says what the step does. It is rendered when shown, so it
	// follows a language switch.
	Title i18n.Message
	Phase Phase
	// Elapsed is the step's duration, set when it is done or failed.
	Elapsed time.Duration
	// Err is why the step failed.
	Err error
}

// Progress receives step events. It is called from the goroutine running
// the operation and must not block for long.
type Progress func(StepEvent)

// step runs fn as one step, reporting its start and its end to p.
func (p Progress) step(title i18n.Message, fn func() error) error {
	if p == nil {
		return fn()
	}
	start := time.Now()
	p(StepEvent{Title: title, Phase: StepStarted})
	err := fn()
	ev := StepEvent{Title: title, Phase: StepDone, Elapsed: time.Since(start)}
	if err != nil {
		ev.Phase, ev.Err = StepFailed, err
	}
	p(ev)
	return err
}
