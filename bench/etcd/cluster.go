// Package etcdbench measures klab's etcd member against the real etcd server
// (go.etcd.io/etcd/server/v3/embed) side by side, in one process, on the same
// machine and with the same timings and fsync setting: put throughput and
// latency under load, and the time a cluster takes to accept writes again
// after its leader dies.
//
// Both systems are driven through the same clientv3 code, so any difference
// in the figures comes from the servers, not from the load generator.
package etcdbench

import (
	"context"
	"fmt"
	"time"
)

// Cluster is a running cluster of either system, seen the same way by the
// load generator and the failover trials.
type Cluster interface {
	// System names the implementation, e.g. "klab" or "etcd v3.7.3".
	System() string
	// Size is the number of members, running or not.
	Size() int
	// Endpoint is member i's client URL.
	Endpoint(i int) string
	// Leader returns the index of the leader every running member agrees
	// on, or -1 while they do not agree (election in progress, a member
	// not yet caught up with the leader).
	Leader() int
	// Kill stops member i abruptly, as a crash would: no leadership
	// transfer, no goodbye to its peers. It returns once the member's raft
	// loop has stopped.
	Kill(i int) error
	// Restart starts a killed member again on its existing data.
	Restart(i int) error
	// Close stops every member and removes what the cluster wrote to disk.
	Close()
}

// pollInterval is how often leader agreement is checked. Neither system
// offers an event for "every member agrees on the leader", so this is
// polled, with a deadline.
const pollInterval = 10 * time.Millisecond

// WaitLeader waits until the running members of c agree on a leader and
// returns its index.
func WaitLeader(ctx context.Context, c Cluster, timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		if l := c.Leader(); l >= 0 {
			return l, nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("%s: no leader agreed on within %v: %w", c.System(), timeout, ctx.Err())
		case <-t.C:
		}
	}
}

// Endpoints returns the client URLs of the members with the given indexes,
// or of every member if none are given.
func Endpoints(c Cluster, idx ...int) []string {
	if len(idx) == 0 {
		for i := 0; i < c.Size(); i++ {
			idx = append(idx, i)
		}
	}
	eps := make([]string, 0, len(idx))
	for _, i := range idx {
		eps = append(eps, c.Endpoint(i))
	}
	return eps
}
