package etcdbench

import (
	"fmt"
	"io"
	"time"
)

// ThroughputRow is one system under one put workload.
type ThroughputRow struct {
	System  string
	Fsync   bool
	Clients int
	Conns   int
	Result  LoadResult
}

// FailoverRow is one system's failover trials.
type FailoverRow struct {
	System string
	Fsync  bool
	Result FailoverResult
}

// WriteThroughputTable prints rows as a Markdown table.
func WriteThroughputTable(w io.Writer, rows []ThroughputRow) {
	fmt.Fprintln(w, "| system | fsync | scenario | puts | errors | ops/s | p50 | p99 |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | put, %d client(s) on %d conn(s) | %d | %d | %.0f | %s | %s |\n",
			r.System, onOff(r.Fsync), r.Clients, r.Conns, r.Result.Ops, r.Result.Errors,
			r.Result.Throughput(), ms(r.Result.Percentile(50)), ms(r.Result.Percentile(99)))
	}
}

// WriteFailoverTable prints rows as a Markdown table.
func WriteFailoverTable(w io.Writer, rows []FailoverRow) {
	fmt.Fprintln(w, "| system | fsync | trials | write ok p50 | write ok mean | write ok max | new leader p50 | new leader mean | new leader max |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		rec, el := r.Result.Recovery, r.Result.Elected
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %s | %s | %s |\n",
			r.System, onOff(r.Fsync), len(rec), ms(Percentile(rec, 50)), ms(Mean(rec)), ms(Percentile(rec, 100)),
			ms(Percentile(el, 50)), ms(Mean(el)), ms(Percentile(el, 100)))
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// ms formats d in milliseconds, with more digits for small values.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	if v < 10 {
		return fmt.Sprintf("%.2f ms", v)
	}
	return fmt.Sprintf("%.0f ms", v)
}
