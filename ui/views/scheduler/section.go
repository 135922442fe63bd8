package scheduler

// section is a block of the view whose rows may be cut to fit the height:
// Head and Tail always show, Rows as many as there is room for.
type section struct {
	Head, Rows, Tail []string
	// More says how many rows were left out, in the current language.
	More func(n int) string
	// Alt, if set, is a shorter form of the section, drawn when this one
	// does not fit whole.
	Alt *section
}

// lines returns the section in at most budget lines, when it can.
func (s section) lines(budget int) []string {
	if s.Alt != nil && budget < s.size() {
		return s.Alt.lines(budget)
	}
	out := append([]string(nil), s.Head...)
	rows := s.Rows
	if room := budget - len(s.Head) - len(s.Tail); room < len(rows) {
		keep := max(room-1, 1)
		rest := len(rows) - keep
		rows = append(rows[:keep:keep], s.More(rest))
	}
	out = append(out, rows...)
	return append(out, s.Tail...)
}

// size is how many lines the section takes whole.
func (s section) size() int { return len(s.Head) + len(s.Rows) + len(s.Tail) }

// minSize is the fewest lines the section can be cut to.
func (s section) minSize() int {
	n := len(s.Head) + min(len(s.Rows), 2) + len(s.Tail)
	if s.Alt != nil {
		n = min(n, s.Alt.minSize())
	}
	return n
}
