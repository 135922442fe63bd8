package lessons

// Evaluator judges a step's check on a stream of observations. It keeps
// the cluster as the observations describe it, so it must see every
// observation from before the step began as well as after: feed it from
// the start, and call Begin when a step begins.
//
// A step passes the first time its check holds; the verdict then stays
// passed whatever happens next, since the student did what the step asked.
// An Evaluator is not safe for concurrent use: the TUI feeds it from its
// update loop.
type Evaluator struct {
	now   *world
	start *world
	check Check
	needs Needs
	// verdict is the last judgement; valid while check is set.
	verdict Verdict
}

// NewEvaluator returns an Evaluator that judges nothing until Begin.
func NewEvaluator() *Evaluator { return &Evaluator{now: newWorld()} }

// Begin starts judging c, from the cluster as observed so far, and returns
// the first verdict: a check about the cluster's state can hold at once.
// A nil check judges nothing.
func (e *Evaluator) Begin(c Check) Verdict {
	// Commands, Events, requests and traffic runs are counted per step:
	// those of earlier steps are dropped here, which also keeps the lists
	// short.
	e.now.forgetStep()
	e.start = e.now.clone()
	e.check = c
	e.verdict = Verdict{}
	if c == nil {
		e.needs = Needs{}
		return e.verdict
	}
	e.needs = c.Needs()
	e.verdict = c.evaluate(e.start, e.now)
	return e.verdict
}

// Observe records obs and, when it bears on the check being judged,
// judges again. It returns the verdict and whether it changed, so that the
// caller redraws only then.
func (e *Evaluator) Observe(obs Observation) (v Verdict, changed bool) {
	// The API servers' requests are kept only while a check reads them:
	// a lab serves several a second, and those of a step whose check
	// does not read them would never be.
	if _, ok := obs.(RequestObserved); ok && !e.needs.Requests {
		return e.verdict, false
	}
	if _, ok := obs.(EtcdRequestObserved); ok && !e.needs.EtcdRequests {
		return e.verdict, false
	}
	e.now.apply(obs)
	if e.check == nil || e.verdict.Passed || !e.needs.wants(obs) {
		return e.verdict, false
	}
	next := e.check.evaluate(e.start, e.now)
	changed = !sameVerdict(next, e.verdict)
	e.verdict = next
	return next, changed
}

// Verdict returns the current verdict.
func (e *Evaluator) Verdict() Verdict { return e.verdict }

// Check returns the check being judged, or nil.
func (e *Evaluator) Check() Check { return e.check }
