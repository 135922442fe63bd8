package traffic

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mattn/go-runewidth"

	"github.com/klab-dev/klab/assets/i18n"
)

// barWidth is the length, in cells, of the bar of the pod that answered most.
const barWidth = 24

// width measures text as a terminal shows it: Hangul takes two cells. Box
// and block characters are counted as one cell whatever the locale, as
// terminals draw them, so a Korean locale does not shift the columns.
var width = &runewidth.Condition{EastAsianWidth: false, StrictEmojiNeutral: true}

// translate renders a message; the package test wraps it to record the keys
// Write uses.
var translate = func(l i18n.Lang, key string, args ...any) string { return l.T(key, args...) }

// Write prints the report for a person in language l, with Unicode block
// bars.
func (r *Report) Write(w io.Writer, l i18n.Lang) error {
	return r.write(w, l, unicodeBar)
}

// WriteASCII prints the report as Write does, with bars of '#' for
// terminals and logs that cannot show block characters.
func (r *Report) WriteASCII(w io.Writer, l i18n.Lang) error {
	return r.write(w, l, asciiBar)
}

func (r *Report) write(out io.Writer, l i18n.Lang, bar func(count, most int) string) error {
	w := bufio.NewWriter(out)
	t := func(key string, args ...any) string { return translate(l, key, args...) }

	if r.ProxyNode != "" {
		fmt.Fprintln(w, t("traffic.header.node", r.Proxy, r.Target, r.ProxyNode))
	} else {
		fmt.Fprintln(w, t("traffic.header", r.Proxy, r.Target))
	}
	switch modes := slices.Sorted(maps.Keys(r.Modes)); len(modes) {
	case 0:
	case 1:
		fmt.Fprintln(w, t("traffic.mode", modes[0]))
	default:
		items := make([]string, len(modes))
		for i, m := range modes {
			items[i] = t("traffic.modes.item", m, r.Modes[m])
		}
		fmt.Fprintln(w, t("traffic.modes.switched", strings.Join(items, ", ")))
	}
	fmt.Fprintln(w, t("traffic.summary", r.Requests, formatDuration(r.Elapsed), r.Succeeded, r.Failed))
	fmt.Fprintln(w)

	if len(r.Pods) == 0 {
		fmt.Fprintln(w, t("traffic.noPods"))
	} else {
		most := 0
		for _, p := range r.Pods {
			most = max(most, p.Count)
		}
		rows := [][]string{{t("traffic.col.pod"), t("traffic.col.node"), t("traffic.col.endpoint"),
			t("traffic.col.count"), t("traffic.col.share"), ""}}
		for _, p := range r.Pods {
			rows = append(rows, []string{orDash(p.Pod), orDash(p.Node), orDash(p.Endpoint),
				fmt.Sprint(p.Count), fmt.Sprintf("%.1f%%", 100*p.Share), bar(p.Count, most)})
		}
		writeTable(w, rows, []bool{false, false, false, true, true, false})
	}

	if len(r.Failures) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, t("traffic.failures"))
		rows := make([][]string, 0, len(r.Failures))
		for _, f := range r.Failures {
			rows = append(rows, []string{"", fmt.Sprint(f.Count), stageLabel(t, f.Stage), f.Reason})
		}
		writeTable(w, rows, []bool{false, true, false, false})
	}

	fmt.Fprintln(w)
	if r.Succeeded == 0 {
		fmt.Fprintln(w, t("traffic.latency.none"))
	} else {
		lat := r.Latency
		fmt.Fprintln(w, t("traffic.latency", formatDuration(lat.Min), formatDuration(lat.P50),
			formatDuration(lat.P90), formatDuration(lat.P99), formatDuration(lat.Max)))
	}
	c := r.ChiSquare
	switch {
	case c.DF == 0:
		fmt.Fprintln(w, t("traffic.chiSquare.none"))
	case c.Statistic == 0:
		fmt.Fprintln(w, t("traffic.chiSquare.exact", c.DF))
	case c.Uneven():
		fmt.Fprintln(w, t("traffic.chiSquare.uneven", fmt.Sprintf("%.2f", c.Statistic), c.DF, formatPValue(c.PValue)))
	default:
		fmt.Fprintln(w, t("traffic.chiSquare.even", fmt.Sprintf("%.2f", c.Statistic), c.DF, formatPValue(c.PValue)))
	}
	return w.Flush()
}

func stageLabel(t func(string, ...any) string, stage string) string {
	switch stage {
	case StageDial, StageConnect, StageHTTP:
		return t("traffic.stage." + stage)
	}
	return stage
}

// writeTable prints rows in columns two cells apart, padded by display
// width; right[i] right-aligns column i. The last column is not padded.
func writeTable(w io.Writer, rows [][]string, right []bool) {
	widths := make([]int, len(right))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], width.StringWidth(cell))
		}
	}
	for _, row := range rows {
		var b strings.Builder
		for i, cell := range row {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-width.StringWidth(cell))
			switch {
			case right[i]:
				b.WriteString(pad + cell)
			case i == len(row)-1:
				b.WriteString(cell)
			default:
				b.WriteString(cell + pad)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// eighths are the left-aligned partial blocks, one to seven eighths wide.
var eighths = []rune("▏▎▍▌▋▊▉")

// unicodeBar draws count against most in full and partial blocks, to an
// eighth of a cell. A pod that answered at all gets at least a sliver.
func unicodeBar(count, most int) string {
	if count <= 0 || most <= 0 {
		return ""
	}
	n := max(1, int(math.Round(float64(count)/float64(most)*barWidth*8)))
	bar := strings.Repeat("█", n/8)
	if n%8 > 0 {
		bar += string(eighths[n%8-1])
	}
	return bar
}

// asciiBar draws count against most in '#', to a cell.
func asciiBar(count, most int) string {
	if count <= 0 || most <= 0 {
		return ""
	}
	return strings.Repeat("#", max(1, int(math.Round(float64(count)/float64(most)*barWidth))))
}

// formatDuration rounds d to three significant digits: 2.35ms, 346µs, 1.23s.
func formatDuration(d time.Duration) string {
	unit := time.Duration(1)
	for d/unit >= 1000 {
		unit *= 10
	}
	return d.Round(unit).String()
}

// formatPValue shows three decimals, or an exponent for tiny values.
func formatPValue(p float64) string {
	switch {
	case p >= 0.9995:
		return "1"
	case p >= 0.001:
		return fmt.Sprintf("%.3f", p)
	default:
		return fmt.Sprintf("%.1e", p)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
