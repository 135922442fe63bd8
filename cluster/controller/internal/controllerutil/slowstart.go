package controllerutil

import "sync"

const (
	// SlowStartInitialBatchSize is the size of the first batch of pod
	// creates; each batch that fully succeeds doubles the next.
	SlowStartInitialBatchSize = 1
	// BurstReplicas caps how many pods one sync of a ReplicaSet or
	// DaemonSet creates or deletes (upstream's default burst, 500).
	BurstReplicas = 500
)

// SlowStartBatch calls fn count times, in parallel batches of
// initialBatchSize, 2×, 4×, ... and stops after the first batch with an
// error. A controller whose creates all fail (quota, admission, a
// terminating namespace) thus sends one request and one event, not
// hundreds. It returns how many calls succeeded and the first error.
func SlowStartBatch(count, initialBatchSize int, fn func() error) (int, error) {
	remaining, successes := count, 0
	for batch := min(remaining, initialBatchSize); batch > 0; batch = min(2*batch, remaining) {
		errs := make(chan error, batch)
		var wg sync.WaitGroup
		for range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := fn(); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		successes += batch - len(errs)
		if len(errs) > 0 {
			return successes, <-errs
		}
		remaining -= batch
	}
	return successes, nil
}
