package traffic

import (
	"testing"
	"time"
)

func TestNearestRankPercentiles(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // unsorted on purpose
	}
	tests := []struct {
		name      string
		latencies []time.Duration
		want      LatencySummary
	}{
		{"none", nil, LatencySummary{}},
		{"one", ms(7), LatencySummary{Min: 7e6, P50: 7e6, P90: 7e6, P99: 7e6, Max: 7e6}},
		// Ranks ⌈0.5·4⌉ = 2, ⌈0.9·4⌉ = 4, ⌈0.99·4⌉ = 4.
		{"four", ms(40, 10, 30, 20), LatencySummary{Min: 10e6, P50: 20e6, P90: 40e6, P99: 40e6, Max: 40e6}},
		{"a hundred", ms(hundred...), LatencySummary{Min: 1e6, P50: 50e6, P90: 90e6, P99: 99e6, Max: 100e6}},
		// Ranks ⌈0.5·10⌉ = 5, ⌈0.9·10⌉ = 9, ⌈0.99·10⌉ = 10.
		{"ten", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), LatencySummary{Min: 1e6, P50: 5e6, P90: 9e6, P99: 10e6, Max: 10e6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summarize(tt.latencies); got != tt.want {
				t.Errorf("summarize = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestTallyGroupsAndSorts(t *testing.T) {
	tl := newTally("127.0.0.1:10256", testTarget)
	add := func(r Result) { tl.add(r) }
	add(Result{Pod: "web-b", Namespace: "default", Node: "worker-2", Endpoint: "10.244.2.5:8080", Mode: "iptables", Latency: 2 * time.Millisecond})
	add(Result{Pod: "web-a", Namespace: "default", Node: "worker-1", Endpoint: "10.244.1.5:8080", Mode: "iptables", Latency: time.Millisecond})
	add(Result{Pod: "web-b", Namespace: "default", Node: "worker-2", Endpoint: "10.244.2.5:8080", Mode: "nftables", Latency: 3 * time.Millisecond})
	add(Result{Stage: StageConnect, Err: "503 Service Unavailable: no endpoints", Mode: "nftables"})
	add(Result{Stage: StageHTTP, Err: "read tcp 127.0.0.1:40001->127.0.0.1:10256: read: connection reset by peer"})
	add(Result{Stage: StageHTTP, Err: "read tcp 127.0.0.1:40002->127.0.0.1:10256: read: connection reset by peer"})
	add(Result{Stage: StageDial, Err: "dial tcp 127.0.0.1:10256: connect: connection refused"})
	r := tl.finish(time.Second)

	if r.Requests != 7 || r.Succeeded != 3 || r.Failed != 4 {
		t.Errorf("requests %d, succeeded %d, failed %d", r.Requests, r.Succeeded, r.Failed)
	}
	if r.Modes["iptables"] != 2 || r.Modes["nftables"] != 2 || len(r.Modes) != 2 {
		t.Errorf("modes = %v", r.Modes)
	}
	if len(r.Pods) != 2 || r.Pods[0].Pod != "web-a" || r.Pods[1].Count != 2 || r.Pods[1].Share != 2.0/3 {
		t.Errorf("pods = %+v", r.Pods)
	}
	want := []FailureCount{
		{StageHTTP, "read tcp 127.0.0.1:10256: read: connection reset by peer", 2},
		{StageConnect, "503 Service Unavailable: no endpoints", 1},
		{StageDial, "dial tcp 127.0.0.1:10256: connect: connection refused", 1},
	}
	if len(r.Failures) != len(want) {
		t.Fatalf("failures = %+v", r.Failures)
	}
	for i := range want {
		if r.Failures[i] != want[i] {
			t.Errorf("failures[%d] = %+v, want %+v", i, r.Failures[i], want[i])
		}
	}
	if r.Latency.P50 != 2*time.Millisecond || r.Elapsed != time.Second {
		t.Errorf("latency %+v, elapsed %s", r.Latency, r.Elapsed)
	}
}
