package componentbase

import "log/slog"

// Logger returns l, or, when l is nil, a logger that discards everything:
// a component or library given no logger logs nowhere.
func Logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
