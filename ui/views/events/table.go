package events

import (
	"strings"

	"github.com/klab-dev/klab/ui/common"
)

// column is one column of a table: its title, how wide its content wants
// to be, how narrow it may get, and whether it may go altogether when
// the table is too wide (the higher Drop, the sooner).
type column struct {
	Title      string
	Want, Min  int
	Drop       int
	AlignRight bool
	// Flex: the column takes what the others leave (one per table).
	Flex bool
}

const colGap = 1

// fitColumns decides each column's width in a table width cells wide.
// The flexible column takes what the others leave. When that is less than
// its minimum, the columns with Drop of 3 or more go first (the highest
// first), then the widest columns shrink towards their minimum, then the
// other droppable columns go. A dropped column has width 0.
func fitColumns(cols []column, width int) []int {
	ws := make([]int, len(cols))
	flex := 0
	for i, c := range cols {
		ws[i] = max(c.Want, c.Min, common.Width(c.Title))
		if c.Flex {
			flex = i
		}
	}
	short := func() bool {
		n := 0
		for i := range cols {
			if i != flex && ws[i] > 0 {
				n += ws[i] + colGap
			}
		}
		return width-n < cols[flex].Min
	}
	drop := func(least int) bool {
		d := -1
		for i, c := range cols {
			if i != flex && ws[i] > 0 && c.Drop >= least && (d < 0 || c.Drop > cols[d].Drop) {
				d = i
			}
		}
		if d >= 0 {
			ws[d] = 0
		}
		return d >= 0
	}
	shrink := func() bool {
		widest := -1
		for i, c := range cols {
			if i != flex && ws[i] > max(c.Min, common.Width(c.Title)) && (widest < 0 || ws[i] > ws[widest]) {
				widest = i
			}
		}
		if widest >= 0 {
			ws[widest]--
		}
		return widest >= 0
	}
	for short() && drop(3) {
	}
	for short() && shrink() {
	}
	for short() && drop(1) {
	}
	n := 0
	for i := range cols {
		if i != flex && ws[i] > 0 {
			n += ws[i] + colGap
		}
	}
	ws[flex] = max(width-n, 1)
	return ws
}

// cells joins a row's cells at the widths fitColumns gave, leaving out
// dropped columns.
func cells(cols []column, ws []int, values []string) string {
	var b strings.Builder
	first := true
	for i, v := range values {
		if ws[i] == 0 {
			continue
		}
		if !first {
			b.WriteString(strings.Repeat(" ", colGap))
		}
		first = false
		if cols[i].AlignRight {
			b.WriteString(common.PadLeft(v, ws[i]))
		} else {
			b.WriteString(common.Pad(v, ws[i]))
		}
	}
	return b.String()
}
