package etcdbench

import (
	"context"
	"fmt"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// FailoverSpec describes the leader-failover trials.
type FailoverSpec struct {
	Trials int
	// AttemptTimeout bounds each write attempt after the kill; a failed
	// attempt is retried at once (after RetryPause if it failed faster).
	AttemptTimeout time.Duration
	RetryPause     time.Duration
	// GiveUp bounds one trial's wait for a successful write.
	GiveUp time.Duration
}

// FailoverResult is what the trials measured.
type FailoverResult struct {
	// Recovery is, per trial, the time from the start of the leader's kill
	// until a write through the surviving members succeeded. Sorted.
	Recovery []time.Duration
	// Elected is, per trial, the time from the start of the kill until the
	// survivors agreed on a new leader, polled every 10 ms: finer grained
	// than Recovery, whose resolution is the write attempt timeout. Sorted.
	Elected []time.Duration
}

// Mean returns the mean of ds, or 0 for none.
func Mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// Percentile returns the p-th nearest-rank percentile of the sorted ds.
func Percentile(ds []time.Duration, p float64) time.Duration { return percentile(ds, p) }

// Failover kills the leader of c Trials times. Each trial waits for a
// leader every member agrees on, dials a client to the other members and
// proves it with a write, kills the leader, and times until a write through
// the survivors succeeds; then it restarts the killed member and waits until
// it follows the leader and serves a write itself, so every trial starts
// from a whole, healthy cluster.
func Failover(ctx context.Context, c Cluster, spec FailoverSpec) (FailoverResult, error) {
	var res FailoverResult
	if spec.AttemptTimeout <= 0 {
		spec.AttemptTimeout = 200 * time.Millisecond
	}
	if spec.GiveUp <= 0 {
		spec.GiveUp = 30 * time.Second
	}
	for trial := 1; trial <= spec.Trials; trial++ {
		t, err := failoverTrial(ctx, c, spec, trial)
		if err != nil {
			return res, fmt.Errorf("%s failover trial %d: %w", c.System(), trial, err)
		}
		res.Recovery = append(res.Recovery, t.recovery)
		res.Elected = append(res.Elected, t.elected)
	}
	slices.Sort(res.Recovery)
	slices.Sort(res.Elected)
	return res, nil
}

// trialTimes is what one failover trial measured.
type trialTimes struct{ recovery, elected time.Duration }

func failoverTrial(ctx context.Context, c Cluster, spec FailoverSpec, trial int) (tt trialTimes, err error) {
	lead, err := WaitLeader(ctx, c, 20*time.Second)
	if err != nil {
		return tt, err
	}
	var survivors []int
	for i := 0; i < c.Size(); i++ {
		if i != lead {
			survivors = append(survivors, i)
		}
	}
	cli, err := newClient(Endpoints(c, survivors...))
	if err != nil {
		return tt, err
	}
	defer cli.Close()
	key := fmt.Sprintf("failover/%d", trial)
	// Connections to the survivors are up before the clock starts.
	if _, err := putUntilOK(ctx, cli, key, "before", spec); err != nil {
		return tt, fmt.Errorf("write before the kill: %w", err)
	}

	t0 := time.Now()
	if err := c.Kill(lead); err != nil {
		return tt, fmt.Errorf("kill leader %d: %w", lead, err)
	}
	elected := make(chan error, 1)
	go func() {
		// Leader skips the killed member, so any answer is a survivor.
		_, err := WaitLeader(ctx, c, spec.GiveUp)
		tt.elected = time.Since(t0)
		elected <- err
	}()
	_, err = putUntilOK(ctx, cli, key, "after", spec)
	tt.recovery = time.Since(t0)
	if eerr := <-elected; eerr != nil {
		return tt, fmt.Errorf("survivors after killing leader %d: %w", lead, eerr)
	}
	if err != nil {
		return tt, fmt.Errorf("write after killing leader %d: %w", lead, err)
	}

	if err := c.Restart(lead); err != nil {
		return tt, fmt.Errorf("restart member %d: %w", lead, err)
	}
	if _, err := WaitLeader(ctx, c, 20*time.Second); err != nil {
		return tt, err
	}
	back, err := newClient(Endpoints(c, lead))
	if err != nil {
		return tt, err
	}
	defer back.Close()
	if _, err := putUntilOK(ctx, back, key, "rejoined", spec); err != nil {
		return tt, fmt.Errorf("write through restarted member %d: %w", lead, err)
	}
	return tt, nil
}

// putUntilOK retries a put, each attempt bounded by spec.AttemptTimeout,
// until one succeeds or spec.GiveUp passes. It returns the attempts made.
func putUntilOK(ctx context.Context, cli *clientv3.Client, key, val string, spec FailoverSpec) (int, error) {
	deadline := time.Now().Add(spec.GiveUp)
	for attempt := 1; ; attempt++ {
		t0 := time.Now()
		actx, cancel := context.WithTimeout(ctx, spec.AttemptTimeout)
		_, err := cli.Put(actx, key, val)
		cancel()
		if err == nil {
			return attempt, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return attempt, fmt.Errorf("no write succeeded in %d attempts: %w", attempt, err)
		}
		// A member without a leader may refuse at once; don't spin on it.
		if d := spec.RetryPause - time.Since(t0); d > 0 {
			time.Sleep(d)
		}
	}
}
