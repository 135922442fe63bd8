package raft

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/ui/internal/uitest"
)

// BenchmarkRenderBusy draws the Raft view of 5 members under heavy write
// traffic (every message the state keeps on screen) and reports the 99th
// percentile of one frame besides the mean: a frame must take under 5 ms.
func BenchmarkRenderBusy(b *testing.B) {
	for _, size := range []struct{ W, H int }{{120, 40}, {200, 60}} {
		b.Run(fmt.Sprintf("5members-%dx%d", size.W, size.H), func(b *testing.B) {
			c := uitest.Setup(b, i18n.English)
			// Colour, as a real terminal has: escape codes cost time.
			lipgloss.SetColorProfile(termenv.TrueColor)
			b.Cleanup(func() { lipgloss.SetColorProfile(termenv.Ascii) })
			_, st := uitest.Busy(5, 200)
			if len(st.Messages) < 200 {
				b.Fatalf("only %d messages in flight", len(st.Messages))
			}
			v := New(c, st)
			v.SetSize(size.W, size.H)
			frames := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				_ = v.View()
				frames = append(frames, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(frames)
			b.ReportMetric(float64(frames[len(frames)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
