package etcdbench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/klab-dev/klab/internal/testenv"
)

func TestPercentile(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"single", ms(7), 99, 7 * time.Millisecond},
		{"median of odd count", ms(1, 2, 3, 4, 5), 50, 3 * time.Millisecond},
		{"median of even count is the lower middle", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p99 of 100 is the 99th", ms(seq(100)...), 99, 99 * time.Millisecond},
		{"p99 of 1000 is the 990th", ms(seq(1000)...), 99, 990 * time.Millisecond},
		{"p100 is the max", ms(1, 5, 9), 100, 9 * time.Millisecond},
		{"tiny p is the min", ms(1, 5, 9), 0.001, 1 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("percentile(p=%v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// TestBothSystems runs a short load and one failover trial against each
// system, so the benchmark cannot rot unnoticed: every put must succeed and
// a killed leader must be replaced well within the give-up time.
func TestBothSystems(t *testing.T) {
	testenv.EndToEnd(t)
	for _, sys := range []string{"klab", "etcd"} {
		t.Run(sys, func(t *testing.T) {
			c := startForTest(t, sys, true)
			l, err := WaitLeader(context.Background(), c, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			res, err := RunPuts(context.Background(), LoadSpec{
				Endpoints: Endpoints(c, l), Clients: 4, Conns: 2, ValueSize: 256, KeySpace: 100, Ops: 200,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Ops != 200 || res.Errors != 0 || len(res.Latencies) != 200 {
				t.Fatalf("puts: %d ok, %d errors, %d latencies; want 200, 0, 200", res.Ops, res.Errors, len(res.Latencies))
			}
			if p50, p99 := res.Percentile(50), res.Percentile(99); p50 <= 0 || p99 < p50 {
				t.Errorf("p50 %v, p99 %v: want 0 < p50 <= p99", p50, p99)
			}
			fo, err := Failover(context.Background(), c, FailoverSpec{Trials: 1, AttemptTimeout: 100 * time.Millisecond, RetryPause: 5 * time.Millisecond, GiveUp: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if len(fo.Recovery) != 1 || fo.Recovery[0] <= 0 {
				t.Fatalf("failover recovery %v, want one positive duration", fo.Recovery)
			}
			if _, err := WaitLeader(context.Background(), c, 10*time.Second); err != nil {
				t.Fatalf("after the trial the killed member should be back: %v", err)
			}
		})
	}
}

// startForTest starts a 3-member cluster of the system, stopped and removed
// when tb's test ends.
func startForTest(tb testing.TB, sys string, fsync bool) Cluster {
	tb.Helper()
	if sys == "klab" {
		return StartKlab(tb, 3, !fsync)
	}
	e, err := StartEmbed(3, !fsync)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Close)
	return e
}

// BenchmarkPut measures b.N puts of 256 B values to the leader, per system,
// fsync setting and client count, on one cluster per system and fsync
// setting. Besides ns/op it reports ops/s and the p50 and p99 latency.
//
//	go test ./bench/etcd -run '^$' -bench Put -benchtime 5000x
func BenchmarkPut(b *testing.B) {
	for _, fsync := range []bool{true, false} {
		for _, sys := range []string{"klab", "etcd"} {
			b.Run(fmt.Sprintf("%s/fsync=%v", sys, fsync), func(b *testing.B) {
				c := startForTest(b, sys, fsync)
				for _, clients := range []int{1, 64} {
					b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
						benchPuts(b, c, clients)
					})
				}
			})
		}
	}
}

func benchPuts(b *testing.B, c Cluster, clients int) {
	l, err := WaitLeader(context.Background(), c, 10*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	spec := LoadSpec{Endpoints: Endpoints(c, l), Clients: clients, Conns: 8, ValueSize: 256, KeySpace: 10000, Ops: 100}
	if _, err := RunPuts(context.Background(), spec); err != nil { // warm-up
		b.Fatal(err)
	}
	spec.Ops = b.N
	b.ResetTimer()
	res, err := RunPuts(context.Background(), spec)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if res.Errors > 0 {
		b.Fatalf("%d of %d puts failed", res.Errors, b.N)
	}
	b.ReportMetric(res.Throughput(), "ops/s")
	b.ReportMetric(float64(res.Percentile(50))/1e6, "p50-ms")
	b.ReportMetric(float64(res.Percentile(99))/1e6, "p99-ms")
}

// BenchmarkFailover kills the leader b.N times per system (fsync on) and
// reports the recovery time until a write through the survivors succeeds,
// and the mean time until the survivors agreed on a new leader.
//
//	go test ./bench/etcd -run '^$' -bench Failover -benchtime 10x
func BenchmarkFailover(b *testing.B) {
	for _, sys := range []string{"klab", "etcd"} {
		b.Run(sys, func(b *testing.B) {
			c := startForTest(b, sys, true)
			b.ResetTimer()
			res, err := Failover(context.Background(), c, FailoverSpec{Trials: b.N, AttemptTimeout: 100 * time.Millisecond, RetryPause: 5 * time.Millisecond})
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(Percentile(res.Recovery, 50))/1e6, "p50-ms")
			b.ReportMetric(float64(Mean(res.Recovery))/1e6, "mean-ms")
			b.ReportMetric(float64(Percentile(res.Recovery, 100))/1e6, "max-ms")
			b.ReportMetric(float64(Mean(res.Elected))/1e6, "elected-mean-ms")
		})
	}
}
