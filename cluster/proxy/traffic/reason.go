package traffic

import (
	"regexp"
	"strings"
)

// Failure reasons are grouped after the parts that change from one request
// to the next are taken out, so that a hundred refused connections make one
// line, not a hundred. What tells failures apart for a student stays: the
// endpoint that refused, the status, the error.
var (
	// localAddr is the source address Go puts in a socket error
	// ("read tcp 127.0.0.1:51234->10.244.1.5:8080: ..."): an ephemeral
	// port, new on every connection.
	localAddr = regexp.MustCompile(`(?:\[[0-9A-Fa-f:.%]+\]|[0-9A-Za-z.-]+):\d+->`)
	// timestamp matches RFC 3339 and similar date-times.
	timestamp = regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?`)
	// fractionalDuration matches a measured Go duration ("1.003487s",
	// "2m3.5s"); round configured ones ("5s", "100ms") are kept.
	fractionalDuration = regexp.MustCompile(`\b(?:\d+h)?(?:\d+m)?\d+\.\d+(?:ns|µs|us|ms|s)\b`)
)

// normalizeReason turns a failure's message into its group's reason.
func normalizeReason(msg string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	line = localAddr.ReplaceAllString(line, "")
	line = timestamp.ReplaceAllString(line, "<time>")
	line = fractionalDuration.ReplaceAllString(line, "<duration>")
	return strings.TrimSpace(line)
}
