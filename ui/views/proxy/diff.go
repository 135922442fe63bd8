package proxy

// A change to a Service's rules is shown as a line diff against what was
// shown before: the lines removed and added, with a little unchanged
// context around them and longer unchanged stretches folded into one line.

type lineOp int

const (
	lineSame lineOp = iota
	lineAdded
	lineRemoved
	// lineFolded stands for a run of unchanged lines, counted in folded.
	lineFolded
	// lineFoldedRemoved stands for every old line when none was kept.
	lineFoldedRemoved
)

// diffLine is one line of a diff.
type diffLine struct {
	op     lineOp
	text   string
	folded int
}

// foldContext is how many unchanged lines stay visible on each side of a
// change.
const foldContext = 2

// diffLines returns the edit from a to b that keeps a longest common
// subsequence of their lines; removals come before the additions that
// replace them. Rules are at most a few hundred lines, so the quadratic
// table is cheap.
func diffLines(a, b []string) []diffLine {
	// lcs[i][j] is the length of the longest common subsequence of a[i:]
	// and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []diffLine
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out = append(out, diffLine{op: lineSame, text: a[i]})
			i, j = i+1, j+1
		case j == len(b) || (i < len(a) && lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, diffLine{op: lineRemoved, text: a[i]})
			i++
		default:
			out = append(out, diffLine{op: lineAdded, text: b[j]})
			j++
		}
	}
	return out
}

// diffCounts returns how many lines a diff adds and removes.
func diffCounts(d []diffLine) (added, removed int) {
	for _, l := range d {
		switch l.op {
		case lineAdded:
			added++
		case lineRemoved:
			removed++
		case lineFoldedRemoved:
			removed += l.folded
		}
	}
	return added, removed
}

// fold keeps the changed lines and context unchanged lines on each side of
// them, replacing every longer unchanged run by one folded line. When no
// line was kept (a mode switch rewrites the rules in another tool's
// format) the old lines fold into one, so that the new ones show.
func fold(d []diffLine, context int) []diffLine {
	added, removed := diffCounts(d)
	if added > 0 && removed > 0 && added+removed == len(d) {
		out := []diffLine{{op: lineFoldedRemoved, folded: removed}}
		for _, l := range d {
			if l.op == lineAdded {
				out = append(out, l)
			}
		}
		return out
	}
	var out []diffLine
	for i := 0; i < len(d); {
		if d[i].op != lineSame {
			out = append(out, d[i])
			i++
			continue
		}
		j := i
		for j < len(d) && d[j].op == lineSame {
			j++
		}
		// d[i:j] is an unchanged run: keep context lines after a change
		// before it and before a change after it.
		head, tail := context, context
		if i == 0 {
			head = 0
		}
		if j == len(d) {
			tail = 0
		}
		if j-i <= head+tail+1 {
			out = append(out, d[i:j]...)
		} else {
			out = append(out, d[i:i+head]...)
			out = append(out, diffLine{op: lineFolded, folded: j - i - head - tail})
			out = append(out, d[j-tail:j]...)
		}
		i = j
	}
	return out
}
