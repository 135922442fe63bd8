package live

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/lessons"
)

// Timings of a lesson check.
const (
	// DefaultStepTimeout bounds one step: its solution and the wait for
	// its check. The slowest step of the built-in lessons is an election
	// with the raft clock ten times slower (10 to 19 ticks of a second,
	// and more if the vote splits).
	DefaultStepTimeout = 90 * time.Second
	// syncTimeout bounds the wait for a new cluster's initial state: each
	// member's first status and the first lists of nodes and pods.
	syncTimeout = 30 * time.Second
	// removeTimeout bounds stopping and removing a cluster.
	removeTimeout = 2 * time.Minute
)

// CheckOptions tunes CheckLesson.
type CheckOptions struct {
	// Runtime is lab's runtime: "auto" (the default), "local" or "docker".
	Runtime string
	// Name names the cluster the check starts; it must not exist yet.
	// Empty means "lessons-check-<pid>".
	Name string
	// Runner runs the solutions' commands. It is required.
	Runner Runner
	// StepTimeout bounds each step; zero means DefaultStepTimeout.
	StepTimeout time.Duration
	// Progress, when set, is told of each step as it ends, for a live
	// report.
	Progress func(StepResult)
	// Logger receives the cluster's and the feed's log; nil discards it.
	Logger *slog.Logger
	// BuildID tags the Docker node image, as lab.Options.BuildID does.
	BuildID string
}

// CheckLesson runs a lesson against a fresh cluster: it starts a cluster in
// the lesson's shape, and for each step brings the cluster to the step's
// shape if it has one (the old cluster is removed and a new one started
// under the same name), runs the step's solution through opts.Runner and
// waits for the step's check to pass, for at most opts.StepTimeout. The
// cluster is removed at the end, whatever happened. A step that fails
// ends the check: the steps after it are reported as skipped.
//
// The error is for what kept the check from running (a cluster that
// would not start, ctx ending); a failed step is in the report.
func CheckLesson(ctx context.Context, l *lessons.Lesson, opts CheckOptions) (rep *Report, err error) {
	if opts.Runner == nil {
		return nil, errors.New("lessons check: no runner")
	}
	if opts.Runtime == "" {
		opts.Runtime = lab.RuntimeAuto
	}
	if opts.Name == "" {
		opts.Name = "lessons-check-" + strconv.Itoa(os.Getpid())
	}
	if opts.StepTimeout <= 0 {
		opts.StepTimeout = DefaultStepTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	start := time.Now()
	rep = &Report{Lesson: l}
	c := &checker{opts: opts, lesson: l}
	defer func() {
		err = errors.Join(err, c.remove())
		rep.Duration = time.Since(start)
	}()
	shape := l.Cluster
	failed := false
	for i, step := range l.Steps {
		res := StepResult{Lesson: l.ID, Index: i, Step: step}
		if failed {
			res.Outcome = StepSkipped
			c.report(rep, res)
			continue
		}
		if c.cluster == nil || step.Cluster != nil {
			if step.Cluster != nil {
				shape = *step.Cluster
			}
			setup := time.Now()
			if err := c.bringUp(ctx, shape, l.SegmentNeeds(i)); err != nil {
				return rep, i18n.Wrap(err, "lessons.live.err.cluster", l.ID, step.ID, shape.Masters, shape.Workers)
			}
			res.Setup = time.Since(setup)
		}
		if err := c.runStep(ctx, step, &res); err != nil {
			c.report(rep, res)
			return rep, err
		}
		// A step that passes without its act still ran its solution, so
		// the steps after it start where the lesson expects.
		failed = res.Outcome != StepPassed && res.Outcome != StepNoAct
		c.report(rep, res)
	}
	return rep, nil
}

// checker is one lesson's check: the cluster it runs on, the feed from
// that cluster and the evaluator the feed feeds.
type checker struct {
	opts    CheckOptions
	lesson  *lessons.Lesson
	cluster *lab.Cluster
	feed    *Feed
	obs     <-chan []lessons.Observation
	eval    *lessons.Evaluator
	// members is the latest word of each etcd member, for settle.
	members map[string]lessons.MemberObserved
}

func (c *checker) report(rep *Report, res StepResult) {
	rep.Steps = append(rep.Steps, res)
	if c.opts.Progress != nil {
		c.opts.Progress(res)
	}
}

// bringUp removes the current cluster, if any, and starts one in shape,
// with a feed of its state whose initial state has been read.
func (c *checker) bringUp(ctx context.Context, shape lessons.Shape, needs lessons.Needs) error {
	if err := c.remove(); err != nil {
		return err
	}
	dir, err := lab.StateDir(c.opts.Name)
	if err != nil {
		return err
	}
	// A fresh cluster: one of the same name would be started again on its
	// old data, and one that is not ours must not be removed.
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		return i18n.NewError("lessons.live.err.exists", c.opts.Name, dir)
	}
	spec := lab.Spec{
		Name:    c.opts.Name,
		Masters: shape.Masters,
		Workers: shape.Workers,
		Speed:   shape.Speed,
		Runtime: c.opts.Runtime,
		// fsync only matters on power loss; without it a slow disk does
		// not slow every raft write down.
		NoFsync: true,
	}
	if spec.Speed == 0 {
		spec.Speed = 1
	}
	cl, err := lab.Up(ctx, spec, lab.Options{Logger: c.opts.Logger, BuildID: c.opts.BuildID})
	if err != nil {
		return err
	}
	c.cluster = cl
	c.feed = StartFeed(ctx, cl.Info(), FeedOptions{Logger: c.opts.Logger})
	c.feed.Follow(needs)
	c.obs = c.feed.Observations()
	c.eval = lessons.NewEvaluator()
	c.members = map[string]lessons.MemberObserved{}
	timer := time.NewTimer(syncTimeout)
	defer timer.Stop()
	for {
		select {
		case <-c.feed.Synced():
			return nil
		case batch, ok := <-c.obs:
			if !ok {
				// The feed ends with ctx, and only then.
				if err := ctx.Err(); err != nil {
					return err
				}
				return errors.New("lessons feed ended")
			}
			c.observe(batch)
		case <-timer.C:
			return i18n.NewError("lessons.live.err.sync", c.opts.Name, syncTimeout)
		}
	}
}

// remove stops the feed and the cluster and removes the cluster, state
// dir and Docker objects included.
func (c *checker) remove() error {
	if c.feed != nil {
		c.feed.Close()
		c.feed, c.obs, c.eval = nil, nil, nil
	}
	if c.cluster == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
	defer cancel()
	err := c.cluster.Close(ctx, nil)
	c.cluster = nil
	// The control socket is closed now, so Down finds nothing running
	// and only removes what is left: the state dir, Docker's objects.
	_, derr := lab.Down(ctx, c.opts.Name, false, nil)
	return errors.Join(err, derr)
}

// observe feeds a batch to the evaluator.
func (c *checker) observe(batch []lessons.Observation) {
	for _, o := range batch {
		c.eval.Observe(o)
		if m, ok := o.(lessons.MemberObserved); ok {
			c.members[m.Member] = m
		}
	}
}

// settle waits until raft has settled, as a student finds it after reading
// a step: a leader that a quorum of the members follows, or too few
// members running for one to be elected. The engine goes from one step to
// the next at once; without this, a step would begin in the middle of the
// election the last one set off (restarting every member does), and a
// check such as leader-changed would count that election as the step's.
// It reports false if ctx ended first.
func (c *checker) settle(ctx context.Context) bool {
	for !c.settled() {
		select {
		case batch, ok := <-c.obs:
			if !ok {
				return false
			}
			c.observe(batch)
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// settled reports whether the members, as observed, have settled (see
// settle).
func (c *checker) settled() bool {
	quorum := len(c.cluster.Info().Members)/2 + 1
	running := 0
	var leader lessons.MemberObserved
	for _, m := range c.members {
		switch m.State {
		case lessons.MemberLeader:
			if leader.Member == "" || m.Term > leader.Term {
				leader = m
			}
		case lessons.MemberFollower, lessons.MemberCandidate, lessons.MemberPreCandidate:
		default:
			continue
		}
		running++
	}
	if running < quorum {
		return true
	}
	following := 0
	for _, m := range c.members {
		if leader.Member != "" && (m.Member == leader.Member || m.Leader == leader.Member && m.Term == leader.Term) {
			following++
		}
	}
	return following >= quorum
}

// runStep runs one step: it begins its check on the cluster as it is now,
// runs its solution and waits for the verdict. The error is ctx's.
func (c *checker) runStep(ctx context.Context, step *lessons.Step, res *StepResult) error {
	start := time.Now()
	defer func() { res.Duration = time.Since(start) }()
	finish := func() {
		res.Verdict = c.eval.Verdict()
		res.Reasons = res.Verdict.Text(i18n.English)
		res.Outcome = StepFailed
		if res.Verdict.Passed {
			res.Outcome = StepPassed
		}
	}

	// The step begins on the members as they are now, not as they were
	// at their last event: "the leader when the step began" must be the
	// real one. A cluster that does not settle (a lesson may leave the
	// raft clock paused) gets the step all the same, after a while.
	settleCtx, cancelSettle := context.WithTimeout(ctx, c.opts.StepTimeout)
	settled := c.await(settleCtx, c.feed.Refresh()) && c.settle(settleCtx)
	cancelSettle()
	if err := ctx.Err(); err != nil {
		finish()
		return err
	}
	if !settled {
		c.opts.Logger.Warn("lessons check: the members did not settle before the step", "lesson", c.lesson.ID, "step", step.ID)
	}
	sctx, cancel := context.WithTimeout(ctx, c.opts.StepTimeout)
	defer cancel()
	// First without the act: on the cluster as the step finds it, read
	// afresh, the check must not pass yet (unless watching is the act).
	c.eval.Begin(step.Check)
	if !step.Observe && c.await(sctx, c.feed.Refresh()) && c.eval.Verdict().Passed {
		res.Verdict = c.eval.Verdict()
		res.Reasons = res.Verdict.Text(i18n.English)
		res.Outcome = StepNoAct
		c.opts.Logger.Warn("lessons check: the step passed before its solution ran", "lesson", c.lesson.ID, "step", step.ID)
		c.eval.Begin(step.Check)
		for _, cmd := range step.Solution {
			res.Commands = append(res.Commands, c.run(sctx, cmd))
		}
		return ctx.Err()
	}
	c.eval.Begin(step.Check)
	for _, cmd := range step.Solution {
		res.Commands = append(res.Commands, c.run(sctx, cmd))
	}
	for !c.eval.Verdict().Passed && sctx.Err() == nil {
		select {
		case batch, ok := <-c.obs:
			if !ok {
				// The feed ends only with ctx.
				c.obs = nil
				continue
			}
			c.observe(batch)
		case <-sctx.Done():
		}
	}
	finish()
	return ctx.Err()
}

// await feeds the evaluator until done is closed; false if ctx ended or
// the feed closed first.
func (c *checker) await(ctx context.Context, done <-chan struct{}) bool {
	for {
		select {
		case <-done:
			return true
		case batch, ok := <-c.obs:
			if !ok {
				return false
			}
			c.observe(batch)
		case <-ctx.Done():
			return false
		}
	}
}

// run runs one command of a solution on the cluster and feeds its result
// to the evaluator. The feed is read while it runs: an election it causes
// is seen as it happens. A command is never abandoned half-way, since it
// acts on the cluster: the runner bounds it by ctx.
func (c *checker) run(ctx context.Context, cmd lessons.Command) CommandResult {
	start := time.Now()
	res := CommandResult{Command: cmd}
	args, err := cmd.Args()
	if err != nil {
		res.Err = err
		res.Output = err.Error()
		return res
	}
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- c.opts.Runner(ctx, WithCluster(args, c.opts.Name), &out, &out)
	}()
	obs := c.obs
	for {
		select {
		case err := <-done:
			res.Err, res.Output, res.Duration = err, out.String(), time.Since(start)
			c.opts.Logger.Debug("lessons check: command", "command", cmd.String(), "err", err, "took", res.Duration)
			c.eval.Observe(lessons.CommandObserved{Args: args, Err: err, Output: res.Output})
			return res
		case batch, ok := <-obs:
			if !ok {
				obs = nil
				continue
			}
			c.observe(batch)
		}
	}
}
