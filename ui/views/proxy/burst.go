package proxy

import (
	"cmp"
	"slices"
	"strings"

	"github.com/klab-dev/klab/cluster/proxy/traffic"
)

// Traffic the view sends on `t`: enough requests for the spread to show,
// a few at a time, as several clients would.
const (
	burstRequests    = 100
	burstConcurrency = 8
)

// burst is the last burst of traffic: who answered its requests so far.
// It is filled as results arrive, so the chart grows while it runs.
type burst struct {
	service, node string
	// count is how many requests the burst sends.
	count    int
	received int
	pods     []podCount
	failures []failureCount
	modes    map[string]int
	done     bool
	err      error
}

// podCount is how many requests one pod answered.
type podCount struct {
	pod, node string
	count     int
}

// failureCount is how many requests failed at one stage, and the first
// reason given.
type failureCount struct {
	stage, reason string
	count         int
}

func newBurst(service, node string, count int) *burst {
	return &burst{service: service, node: node, count: count, modes: map[string]int{}}
}

func (b *burst) add(r traffic.Result) {
	b.received++
	if r.Mode != "" {
		b.modes[r.Mode]++
	}
	if !r.OK() {
		i := slices.IndexFunc(b.failures, func(f failureCount) bool { return f.stage == r.Stage })
		if i < 0 {
			line, _, _ := strings.Cut(r.Err, "\n")
			b.failures = append(b.failures, failureCount{stage: r.Stage, reason: line})
			i = len(b.failures) - 1
		}
		b.failures[i].count++
		return
	}
	i := slices.IndexFunc(b.pods, func(p podCount) bool { return p.pod == r.Pod })
	if i < 0 {
		b.pods = append(b.pods, podCount{pod: r.Pod, node: r.Node})
		slices.SortFunc(b.pods, func(x, y podCount) int { return cmp.Compare(x.pod, y.pod) })
		i = slices.IndexFunc(b.pods, func(p podCount) bool { return p.pod == r.Pod })
	}
	b.pods[i].count++
}

// failed is how many requests failed so far.
func (b *burst) failed() int {
	n := 0
	for _, f := range b.failures {
		n += f.count
	}
	return n
}

// modeNames lists the modes that handled the requests, most used first: a
// mode switch during a burst shows two.
func (b *burst) modeNames() []string {
	var out []string
	for m := range b.modes {
		out = append(out, m)
	}
	slices.SortFunc(out, func(x, y string) int { return cmp.Or(cmp.Compare(b.modes[y], b.modes[x]), cmp.Compare(x, y)) })
	return out
}
