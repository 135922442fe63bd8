package traffic

import (
	"cmp"
	"slices"
	"time"
)

// Report sums up a run. Marshalled as JSON it is `klab traffic -o json`:
// field names are lowerCamel and durations are nanoseconds in fields whose
// names end in Ns.
type Report struct {
	// Proxy and Target are Options.Proxy and Options.Target.
	Proxy  string `json:"proxy"`
	Target string `json:"target"`
	// ProxyNode is the node of the kube-proxy, as it named itself.
	ProxyNode string `json:"proxyNode,omitempty"`
	// Modes counts the requests by the proxy mode that handled them: a mode
	// switch during the run shows two. Requests that never reached the
	// proxy are not counted.
	Modes map[string]int `json:"modes"`
	// Requests counts the requests that finished: Succeeded + Failed. It is
	// less than Options.Count only when the run was cancelled.
	Requests  int `json:"requests"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	// Pods counts the successful requests by the pod that answered, sorted
	// by namespace and pod name.
	Pods []PodCount `json:"pods"`
	// Failures groups the failed requests by stage and reason, most
	// frequent first.
	Failures []FailureCount `json:"failures"`
	// Latency summarises the successful requests' latencies.
	Latency LatencySummary `json:"latency"`
	// Elapsed is the run's wall-clock time.
	Elapsed time.Duration `json:"elapsedNs"`
	// ChiSquare tests Pods' counts against an even spread.
	ChiSquare ChiSquare `json:"chiSquare"`
}

// PodCount is how many requests one pod answered.
type PodCount struct {
	Pod       string `json:"pod"`
	Namespace string `json:"namespace"`
	Node      string `json:"node"`
	PodIP     string `json:"podIP"`
	// Endpoint is the endpoint the proxy dialled to reach the pod, from its
	// Klab-Endpoint header (the last one seen, should it change).
	Endpoint string `json:"endpoint"`
	Count    int    `json:"count"`
	// Share is Count over the run's successful requests, from 0 to 1.
	Share float64 `json:"share"`
}

// FailureCount is how many requests failed at one stage for one reason.
type FailureCount struct {
	Stage  string `json:"stage"`
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

// LatencySummary is the spread of the successful requests' latencies, with
// nearest-rank percentiles. All are zero when no request succeeded.
type LatencySummary struct {
	Min time.Duration `json:"minNs"`
	P50 time.Duration `json:"p50Ns"`
	P90 time.Duration `json:"p90Ns"`
	P99 time.Duration `json:"p99Ns"`
	Max time.Duration `json:"maxNs"`
}

// tally builds a Report from results as they arrive.
type tally struct {
	report    Report
	pods      map[podKey]*PodCount
	failures  map[FailureCount]int // keyed by stage and reason, Count left 0
	latencies []time.Duration
}

type podKey struct{ namespace, pod string }

func newTally(proxy, target string) *tally {
	return &tally{
		report:   Report{Proxy: proxy, Target: target, Modes: map[string]int{}},
		pods:     map[podKey]*PodCount{},
		failures: map[FailureCount]int{},
	}
}

func (t *tally) add(r Result) {
	t.report.Requests++
	if r.Mode != "" {
		t.report.Modes[r.Mode]++
	}
	if r.ProxyNode != "" {
		t.report.ProxyNode = r.ProxyNode
	}
	if !r.OK() {
		t.report.Failed++
		t.failures[FailureCount{Stage: r.Stage, Reason: normalizeReason(r.Err)}]++
		return
	}
	t.report.Succeeded++
	t.latencies = append(t.latencies, r.Latency)
	k := podKey{r.Namespace, r.Pod}
	p := t.pods[k]
	if p == nil {
		p = &PodCount{Pod: r.Pod, Namespace: r.Namespace}
		t.pods[k] = p
	}
	p.Count++
	p.Node, p.PodIP = r.Node, r.PodIP
	if r.Endpoint != "" {
		p.Endpoint = r.Endpoint
	}
}

// finish completes the report: sorted lists, shares, percentiles, the test.
func (t *tally) finish(elapsed time.Duration) *Report {
	r := t.report
	r.Elapsed = elapsed
	r.Pods = make([]PodCount, 0, len(t.pods))
	for _, p := range t.pods {
		p.Share = float64(p.Count) / float64(r.Succeeded)
		r.Pods = append(r.Pods, *p)
	}
	slices.SortFunc(r.Pods, func(a, b PodCount) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod))
	})
	r.Failures = make([]FailureCount, 0, len(t.failures))
	for f, n := range t.failures {
		f.Count = n
		r.Failures = append(r.Failures, f)
	}
	slices.SortFunc(r.Failures, func(a, b FailureCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Stage, b.Stage), cmp.Compare(a.Reason, b.Reason))
	})
	r.Latency = summarize(t.latencies)
	counts := make([]int, len(r.Pods))
	for i, p := range r.Pods {
		counts[i] = p.Count
	}
	r.ChiSquare = ChiSquareUniform(counts)
	return &r
}

// summarize sorts latencies and picks the nearest-rank percentiles.
func summarize(latencies []time.Duration) LatencySummary {
	if len(latencies) == 0 {
		return LatencySummary{}
	}
	s := slices.Clone(latencies)
	slices.Sort(s)
	return LatencySummary{
		Min: s[0],
		P50: nearestRank(s, 50),
		P90: nearestRank(s, 90),
		P99: nearestRank(s, 99),
		Max: s[len(s)-1],
	}
}

// nearestRank is the p-th percentile of sorted by the nearest-rank method:
// the smallest value with at least p percent of the values at or below it,
// that is the value of rank ⌈p/100 · n⌉ counted from 1.
func nearestRank(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}
