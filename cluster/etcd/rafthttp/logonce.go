package rafthttp

import (
	"context"
	"log/slog"
	"strings"
	"sync"
)

// onceLog logs a condition the first time it is seen and stays quiet while
// it persists, so that a peer retrying every second against a permanent
// rejection produces one log line, not one per attempt.
type onceLog struct {
	lg    *slog.Logger
	level slog.Level

	mu   sync.Mutex
	seen map[string]bool
}

func newOnceLog(lg *slog.Logger, level slog.Level) *onceLog {
	return &onceLog{lg: lg, level: level, seen: map[string]bool{}}
}

func (o *onceLog) warn(key, msg string, args ...any) {
	o.mu.Lock()
	first := !o.seen[key]
	o.seen[key] = true
	o.mu.Unlock()
	if first {
		o.lg.Log(context.Background(), o.level, msg, args...)
	}
}

// reset forgets every condition whose key starts with prefix, once it has
// cleared (the peer connected again), so that a recurrence is logged.
func (o *onceLog) reset(prefix string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k := range o.seen {
		if strings.HasPrefix(k, prefix) {
			delete(o.seen, k)
		}
	}
}
