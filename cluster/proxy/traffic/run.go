package traffic

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Run sends opts.Count requests through opts.Proxy to opts.Target, at most
// opts.Concurrency at a time, and reports who answered.
//
// Failed requests are counted in the report, not returned as errors. Run
// returns an error wrapping ErrInvalidOptions for bad options, and ctx's
// error when ctx ends first: it then stops at once, closing the connections
// in flight, and returns the report of the requests that had finished.
func Run(ctx context.Context, opts Options) (*Report, error) {
	opts, requestURI, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	start := time.Now()
	results := make(chan Result, opts.Concurrency)
	var next atomic.Int64 // the last Seq handed out
	var workers sync.WaitGroup
	for range opts.Concurrency {
		workers.Go(func() {
			for ctx.Err() == nil {
				seq := int(next.Add(1))
				if seq > opts.Count {
					return
				}
				res, err := do(ctx, opts, requestURI, seq)
				if errors.Is(err, errCancelled) {
					return
				}
				results <- res
			}
		})
	}
	go func() {
		workers.Wait()
		close(results)
	}()

	// This goroutine alone reads the results, so OnResult calls never
	// overlap and the tally needs no lock.
	t := newTally(opts.Proxy, opts.Target)
	for res := range results {
		t.add(res)
		if opts.OnResult != nil {
			opts.OnResult(res)
		}
	}
	report := t.finish(time.Since(start))
	if report.Requests < opts.Count {
		return report, ctx.Err()
	}
	return report, nil
}
