package proxybench

import (
	"fmt"
	"io"
	"math"
	"time"
)

// WriteTable prints the rows as one Markdown table: a mode's sizes are
// consecutive, so its growth reads down the columns.
func WriteTable(w io.Writer, res *Result) {
	fmt.Fprintf(w, "| mode | services | rules | sync p50 | sync p90 | resync p50 | resync p90 | sync × | "+
		"lookup ClusterIP | lookup NodePort | allocs/op | ClusterIP × | NodePort × |\n")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range res.Rows {
		fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s | %s |\n",
			r.Mode, r.Services, r.Rules,
			duration(r.Sync.P50), duration(r.Sync.P90), duration(r.Resync.P50), duration(r.Resync.P90), growth(r.SyncGrowth),
			nanos(r.ClusterIP.NsPerOp), nanos(r.NodePort.NsPerOp),
			allocs(r.ClusterIP.AllocsPerOp), allocs(r.NodePort.AllocsPerOp),
			growth(r.ClusterIPGrowth), growth(r.NodePortGrowth))
	}
}

// duration prints d with three significant digits in µs or ms.
func duration(d time.Duration) string {
	us := float64(d) / float64(time.Microsecond)
	switch {
	case us < 10:
		return fmt.Sprintf("%.2f µs", us)
	case us < 100:
		return fmt.Sprintf("%.1f µs", us)
	case us < 1000:
		return fmt.Sprintf("%.0f µs", us)
	case us < 10_000:
		return fmt.Sprintf("%.2f ms", us/1000)
	case us < 100_000:
		return fmt.Sprintf("%.1f ms", us/1000)
	}
	return fmt.Sprintf("%.0f ms", us/1000)
}

// nanos prints a lookup cost in ns, or µs once it passes 10,000 ns.
func nanos(ns float64) string {
	if ns >= 10_000 {
		return fmt.Sprintf("%.1f µs", ns/1000)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

func allocs(a float64) string {
	if math.Abs(a-math.Round(a)) < 0.05 {
		return fmt.Sprintf("%.0f", a)
	}
	return fmt.Sprintf("%.1f", a)
}

func growth(g float64) string {
	switch {
	case g < 10:
		return fmt.Sprintf("%.2f×", g)
	case g < 100:
		return fmt.Sprintf("%.1f×", g)
	}
	return fmt.Sprintf("%.0f×", g)
}
