package overview

import (
	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/ui/common"
)

// The nodes are drawn in the first of these that fits the height:
//
//  1. every node a box, masters in the first rows, with as much detail as
//     fits, as many boxes to a row as keep them comfortably wide, more
//     (narrower) when that is what it takes;
//  2. the masters as boxes and the workers one line each;
//  3. every node one line.
//
// Heights are counted before anything is drawn, so that trying costs
// little and only the layout chosen is rendered.

// boxFrame is what a box adds to its text: a border line above and below.
const boxFrame = 2

// minBoxLines is the least a box says: its title, a component, its pods.
const minBoxLines = 3

// nodeArea draws the nodes in at most height lines of exactly width cells.
func (v *View) nodeArea(nodes []node, width, height int) []string {
	if height <= 0 {
		return nil
	}
	if len(nodes) == 0 {
		return []string{common.Pad(v.c.Styles.Overview.Muted.Render(common.Fit(i18n.T("ui.ov.no-nodes"), width)), width)}
	}
	all := make([]*node, len(nodes))
	var masters, workers []*node
	for i := range nodes {
		n := &nodes[i]
		all[i] = n
		if n.master {
			masters = append(masters, n)
		} else {
			workers = append(workers, n)
		}
	}
	if lines, ok := v.boxesFitting(masters, workers, width, height); ok {
		return lines
	}
	if len(masters) > 0 && len(workers) > 0 {
		// Keep room for a useful share of the workers.
		reserve := min(len(workers)+1, max(4, height/3))
		if lines, ok := v.boxesFitting(masters, nil, width, height-reserve); ok {
			return append(lines, v.rows(workers, width, height-len(lines))...)
		}
	}
	return v.rows(all, width, height)
}

// innerFor is the text width of boxes perRow to a row of width cells.
func innerFor(width, perRow int) int {
	return min(maxInner, (width-(perRow-1)*boxGap)/perRow-4)
}

// boxesFitting lays masters then workers out as boxes in height lines,
// if they fit.
func (v *View) boxesFitting(masters, workers []*node, width, height int) ([]string, bool) {
	most := max(len(masters), len(workers))
	maxPer := max(1, min(most, (width+boxGap)/(minInner+4+boxGap)))
	rowsAtBest := (len(masters)+maxPer-1)/maxPer + (len(workers)+maxPer-1)/maxPer
	if rowsAtBest*(minBoxLines+boxFrame) > height {
		return nil, false
	}
	// Start at the most boxes a row that stay comfortably wide.
	first := 1
	for p := maxPer; p >= 1; p-- {
		if innerFor(width, p) >= comfortInner {
			first = p
			break
		}
	}
	for d := detailFull; d < numDetails; d++ {
		for p := first; p <= maxPer; p++ {
			inner := innerFor(width, p)
			if inner < 12 {
				break
			}
			if v.gridHeight(masters, p, inner, d)+v.gridHeight(workers, p, inner, d) > height {
				continue
			}
			lines := v.grid(masters, p, inner, width, d)
			lines = append(lines, v.grid(workers, p, inner, width, d)...)
			return lines, true
		}
	}
	return nil, false
}

// gridHeight is how many lines grid would draw.
func (v *View) gridHeight(nodes []*node, perRow, inner int, d detail) int {
	total := 0
	for i := 0; i < len(nodes); i += perRow {
		tallest := 0
		for j := i; j < min(i+perRow, len(nodes)); j++ {
			tallest = max(tallest, v.boxHeight(nodes[j], inner, d))
		}
		total += tallest + boxFrame
	}
	return total
}

// boxHeight is len(boxLines(n, inner, d)), counted without drawing.
func (v *View) boxHeight(n *node, inner int, d detail) int {
	h := 1
	if n.kube != nil && !n.kube.IsReady() && !n.kube.ReadySince.IsZero() {
		h++
	}
	if d < detailNoAddress {
		h += len(v.addressLines(n, inner))
	}
	var packed []int
	for _, c := range n.comps {
		switch {
		case c.name == runtime.ComponentEtcd && n.member != nil:
			h++
			if d < detailNoIndexes && n.member.HasStatus {
				h++
			}
		case d >= detailPacked:
			packed = append(packed, common.Width(v.compTag(n, c, true)))
		default:
			h++
		}
	}
	h += packedLines(packed, inner)
	if n.synced {
		h++
	}
	return h
}

// packedLines is len(common.Pack(items, width, " ")) for items of these
// widths.
func packedLines(widths []int, width int) int {
	lines, cur := 0, 0
	for _, w := range widths {
		switch {
		case w == 0:
		case cur == 0:
			lines++
			cur = min(w, width)
		case cur+1+w <= width:
			cur += 1 + w
		default:
			lines++
			cur = min(w, width)
		}
	}
	return lines
}
