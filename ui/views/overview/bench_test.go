package overview

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/ui/internal/uitest"
)

// BenchmarkRenderLarge draws 3 masters, 100 workers and 1000 pods. In
// "changed", a pod changes before every frame, as when the feed delivers
// an update, so the per-node pod counts are rebuilt each time; in
// "same" the state is drawn again unchanged (a key press, another view's
// message). p99-ns is the 99th percentile of the frames' times.
func BenchmarkRenderLarge(b *testing.B) {
	for _, size := range []struct{ w, h int }{{200, 60}, {120, 40}} {
		for _, changed := range []bool{true, false} {
			name := fmt.Sprintf("%dx%d/same", size.w, size.h)
			if changed {
				name = fmt.Sprintf("%dx%d/changed", size.w, size.h)
			}
			b.Run(name, func(b *testing.B) {
				c := uitest.Setup(b, i18n.English)
				cl := large(100, 1000)
				v := cl.view(c, size.w, size.h)
				pod, _ := cl.ks.Pod("default/web-worker-50-3")
				times := make([]time.Duration, 0, b.N)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					start := time.Now()
					if changed {
						pod.Restarts++
						pod.Ready = i%2 == 0
						cl.ks.SetPod(pod)
					}
					_ = v.View()
					times = append(times, time.Since(start))
				}
				b.StopTimer()
				slices.Sort(times)
				b.ReportMetric(float64(times[len(times)*99/100].Nanoseconds()), "p99-ns")
			})
		}
	}
}
