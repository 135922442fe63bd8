package common

import (
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// Every width here is in terminal cells, measured by lipgloss and ansi,
// never by len: a Korean syllable takes two cells and a styled string
// carries escape codes that take none.

// Fit cuts s to at most width cells, ending with "…" when it had to cut.
func Fit(s string, width int) string {
	if width <= 0 {
		return ""
	}
	if Width(s) <= width {
		return s
	}
	return ansi.Truncate(s, width, "…")
}

// Pad fits s to exactly width cells, padding with spaces on the right.
func Pad(s string, width int) string {
	if width <= 0 {
		return ""
	}
	w := Width(s)
	if w > width {
		s = ansi.Truncate(s, width, "…")
		w = Width(s)
	}
	if w < width {
		s += strings.Repeat(" ", width-w)
	}
	return s
}

// PadLeft fits s to exactly width cells, aligned right.
func PadLeft(s string, width int) string {
	s = Fit(s, width)
	if w := Width(s); w < width {
		s = strings.Repeat(" ", width-w) + s
	}
	return s
}

// Pack lays items out in lines of at most width cells, as many to a line as
// fit, separated by sep. An item wider than a line gets a line of its own,
// cut to fit.
func Pack(items []string, width int, sep string) []string {
	var lines []string
	cur, curW := "", 0
	sepW := Width(sep)
	for _, it := range items {
		if it == "" {
			continue
		}
		w := Width(it)
		switch {
		case curW == 0:
			cur, curW = Fit(it, width), min(w, width)
		case curW+sepW+w <= width:
			cur += sep + it
			curW += sepW + w
		default:
			lines = append(lines, cur)
			cur, curW = Fit(it, width), min(w, width)
		}
	}
	if curW > 0 {
		lines = append(lines, cur)
	}
	return lines
}

// Wrap breaks plain text into lines of at most width cells at spaces
// (never fewer than 8 cells of text), each line starting with indent,
// which counts in the width.
func Wrap(text string, width int, indent string) []string {
	lines := Pack(strings.Fields(text), max(width-Width(indent), 8), " ")
	if len(lines) == 0 {
		return []string{indent}
	}
	for i := range lines {
		lines[i] = indent + lines[i]
	}
	return lines
}

// WrapStyled wraps text as Wrap does and styles every line after its
// indent.
func WrapStyled(style lipgloss.Style, text string, width int, indent string) []string {
	lines := Wrap(text, width, indent)
	for i, l := range lines {
		lines[i] = indent + style.Render(strings.TrimPrefix(l, indent))
	}
	return lines
}

// Clock is the time of day of t in loc, as tables show it; "" for the
// zero time.
func Clock(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return ""
	}
	return t.In(loc).Format("15:04:05")
}

// JoinFitting joins as many of parts (in order of importance) as fit in
// width cells, separated by sep, dropping the rest.
func JoinFitting(parts []string, width int, sep string) string {
	out, w := "", 0
	for _, p := range parts {
		if p == "" {
			continue
		}
		pw := Width(p)
		if w > 0 {
			pw += Width(sep)
		}
		if w+pw > width {
			if w == 0 {
				return Fit(p, width)
			}
			continue
		}
		if w > 0 {
			out += sep
		}
		out += p
		w += pw
	}
	return out
}

// Lines pads or cuts s to exactly height lines of exactly width cells, so
// that a pane never spills into its neighbour.
func Lines(s string, width, height int) string {
	ls := strings.Split(s, "\n")
	if len(ls) > height {
		ls = ls[:height]
	}
	for i := range ls {
		ls[i] = Pad(ls[i], width)
	}
	for len(ls) < height {
		ls = append(ls, strings.Repeat(" ", width))
	}
	return strings.Join(ls, "\n")
}

// Overlay draws fg centred over bg (both width×height blocks of lines),
// keeping bg visible around it, as a dialog floats over a screen.
func Overlay(bg, fg string, width, height int) string {
	bgLines := strings.Split(Lines(bg, width, height), "\n")
	fgLines := strings.Split(fg, "\n")
	fw := Width(fg)
	if fw > width {
		fw = width
	}
	top := max(0, (height-len(fgLines))/2)
	left := max(0, (width-fw)/2)
	for i, l := range fgLines {
		y := top + i
		if y >= len(bgLines) {
			break
		}
		bgLines[y] = cutAround(bgLines[y], 0, left, width) + Pad(l, fw) + cutAround(bgLines[y], left+fw, width, width)
	}
	return strings.Join(bgLines, "\n")
}

// cutAround returns cells [from, to) of a row width cells wide, exactly
// to-from cells wide: a wide character cut in half by either edge is left
// out, and its cell filled with a space.
func cutAround(row string, from, to, width int) string {
	want := to - from
	if want <= 0 {
		return ""
	}
	part := ansi.Cut(row, from, to)
	if Width(part) > want && to < width {
		// A wide character straddles the end: stop before it.
		part = ansi.Cut(row, from, to-1)
	}
	if Width(part) > want {
		// One straddles the start: begin after it.
		part = ansi.Cut(row, from+1, to)
	}
	if gap := want - Width(part); gap > 0 {
		if from > 0 && to == width {
			// What follows a box keeps its columns: the gap goes first.
			return strings.Repeat(" ", gap) + part
		}
		return Pad(part, want)
	}
	return part
}
