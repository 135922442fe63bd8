package proxy

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// wrap breaks a line of rules into rows of at most width cells, at spaces
// where it can, continuing under its own indentation plus indent cells, as
// a long rule reads best when the eye can find where each one starts.
func wrap(line string, width, indent int) []string {
	if width <= 0 {
		return nil
	}
	if ansi.StringWidth(line) <= width {
		return []string{line}
	}
	body := strings.TrimLeft(line, " ")
	lead := len(line) - len(body)
	if lead+indent >= width/2 {
		lead, indent = 0, 0
	}
	var out []string
	cur, curW, empty := strings.Repeat(" ", lead), lead, true
	flush := func() {
		out = append(out, cur)
		cur, curW, empty = strings.Repeat(" ", lead+indent), lead+indent, true
	}
	for _, word := range strings.Split(body, " ") {
		ww := ansi.StringWidth(word)
		if !empty && curW+1+ww > width {
			flush()
		}
		for curW+ww > width { // a word longer than a row
			room := width - curW
			cur += ansi.Cut(word, 0, room)
			word = ansi.Cut(word, room, ww)
			ww -= room
			flush()
		}
		if !empty {
			cur += " "
			curW++
		}
		cur += word
		curW += ww
		empty = false
	}
	if !empty {
		out = append(out, cur)
	}
	return out
}

// bar draws count against full in width cells, to an eighth of a cell.
func bar(count, full, width int) string {
	if full <= 0 || width <= 0 {
		return ""
	}
	eighths := count * width * 8 / full
	if count > 0 && eighths == 0 {
		eighths = 1 // an answer shows, however few
	}
	partial := []string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}
	return strings.Repeat("█", eighths/8) + partial[eighths%8]
}
