package scheduler

import (
	"slices"
	"sync"
	"time"
)

// cycleSamples is how many recent cycle durations the percentiles cover.
const cycleSamples = 1024

// stats counts outcomes and keeps recent cycle durations.
type stats struct {
	mu            sync.Mutex
	scheduled     uint64
	unschedulable uint64
	errors        uint64
	cycles        []time.Duration
	next          int
}

func (s *stats) observeCycle(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.cycles) < cycleSamples {
		s.cycles = append(s.cycles, d)
		return
	}
	s.cycles[s.next] = d
	s.next = (s.next + 1) % cycleSamples
}

func (s *stats) count(result string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch result {
	case ResultScheduled:
		s.scheduled++
	case ResultUnschedulable:
		s.unschedulable++
	default:
		s.errors++
	}
}

// Counters are the scheduler's outcome counts since it started.
type Counters struct {
	// Scheduled counts pods bound.
	Scheduled uint64 `json:"scheduled"`
	// Unschedulable counts attempts that found no node.
	Unschedulable uint64 `json:"unschedulable"`
	// Errors counts attempts and bindings that failed with an error.
	Errors uint64 `json:"errors"`
}

// snapshot returns the counters and the 50th and 99th percentile of the
// recent cycle durations.
func (s *stats) snapshot() (c Counters, p50, p99 time.Duration) {
	s.mu.Lock()
	c = Counters{Scheduled: s.scheduled, Unschedulable: s.unschedulable, Errors: s.errors}
	sorted := slices.Clone(s.cycles)
	s.mu.Unlock()
	slices.Sort(sorted)
	return c, percentile(sorted, 50), percentile(sorted, 99)
}

// percentile returns the p-th percentile of sorted (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}
