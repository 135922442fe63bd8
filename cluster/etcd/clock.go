package etcd

import (
	"math/rand/v2"
	"sync"
	"time"
)

// raftClock drives a member's raft ticks. It can be slowed down, paused and
// stepped one tick at a time so that a student can watch an election; pausing
// it stops the member's timers but not its networking, so a proposal still
// replicates while the clock is frozen.
type raftClock struct {
	mu       sync.Mutex
	interval time.Duration
	paused   bool
	// frozen is set while the whole member is paused: no ticks are made at
	// all, so that a resumed member does not replay a burst of missed ticks
	// (a frozen process's timers do not pile up either).
	frozen bool
	ticks  uint64
	// changed wakes the ticking goroutine when the interval or pause changes.
	changed chan struct{}
	tickc   chan struct{}
}

func newRaftClock(interval time.Duration) *raftClock {
	return &raftClock{interval: interval, changed: make(chan struct{}, 1), tickc: make(chan struct{}, 1024)}
}

func (c *raftClock) status() ClockStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ClockStatus{TickIntervalMS: float64(c.interval) / float64(time.Millisecond), Paused: c.paused, Ticks: c.ticks}
}

func (c *raftClock) set(interval time.Duration, paused bool) {
	c.mu.Lock()
	if interval > 0 {
		c.interval = interval
	}
	c.paused = paused
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// freeze stops or restarts tick production for a paused member, dropping
// any tick still queued.
func (c *raftClock) freeze(on bool) {
	c.mu.Lock()
	c.frozen = on
	c.mu.Unlock()
	for {
		select {
		case <-c.tickc:
		default:
			return
		}
	}
}

// step delivers n ticks now, whether or not the clock is paused.
func (c *raftClock) step(n int) {
	for i := 0; i < n; i++ {
		c.emit()
	}
}

// emit hands one tick to the raft loop. It never blocks: if the loop has
// fallen more than a buffer's worth behind (it is paused or stopping), the
// tick is lost, as it would be for a frozen process.
func (c *raftClock) emit() {
	c.mu.Lock()
	frozen := c.frozen
	c.mu.Unlock()
	if frozen {
		return
	}
	select {
	case c.tickc <- struct{}{}:
		c.mu.Lock()
		c.ticks++
		c.mu.Unlock()
	default:
	}
}

// run ticks until stop is closed.
//
// The first tick comes after a random fraction of the interval. Members
// started together (as a lab starts them) would otherwise tick at the same
// instants, and two followers that drew the same randomised election timeout
// would campaign in the same millisecond and split the vote; separate
// processes started by hand get this random phase for free.
func (c *raftClock) run(stop <-chan struct{}) {
	first := true
	for {
		c.mu.Lock()
		interval, paused := c.interval, c.paused
		c.mu.Unlock()
		var timer <-chan time.Time
		var t *time.Timer
		if !paused {
			d := interval
			if first {
				d = time.Duration(rand.Int64N(int64(interval))) + 1
				first = false
			}
			t = time.NewTimer(d)
			timer = t.C
		}
		select {
		case <-stop:
			if t != nil {
				t.Stop()
			}
			return
		case <-c.changed:
			if t != nil {
				t.Stop()
			}
		case <-timer:
			select {
			case <-stop:
				return
			default:
			}
			c.emit()
		}
	}
}
