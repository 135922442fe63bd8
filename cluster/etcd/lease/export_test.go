package lease

import "time"

// SetClock replaces the lessor's clock, so expiry tests need not sleep.
func SetClock(l *Lessor, now func() time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.now = now
}
