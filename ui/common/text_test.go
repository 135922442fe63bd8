package common

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// cells splits plain text into one string per cell: a wide character's
// second cell is "".
func cells(s string) []string {
	var out []string
	for _, r := range s {
		out = append(out, string(r))
		if Width(string(r)) == 2 {
			out = append(out, "")
		}
	}
	return out
}

// TestOverlayWideCharacters floats boxes of every width over rows of
// Hangul, plain and styled: each cell around the box shows what the
// background had there, except that a character cut in half by an edge of
// the box gives way to a space; every row keeps the screen's width.
func TestOverlayWideCharacters(t *testing.T) {
	const width = 14
	plain := "가나다라마바사"
	for _, bg := range []string{plain, "\x1b[1m가나다\x1b[0m라마\x1b[31m바사\x1b[0m", "a가나다라마바"} {
		under := cells(ansi.Strip(Lines(bg, width, 1)))
		for fw := 1; fw <= width; fw++ {
			box := strings.Repeat("X", fw)
			got := Overlay(bg, box, width, 1)
			left := (width - fw) / 2
			var want strings.Builder
			for c := range width {
				switch {
				case c >= left && c < left+fw:
					want.WriteString("X")
				case c < left && c == left-1 && c+1 < width && under[c+1] == "":
					want.WriteString(" ") // its second half is under the box
				case c >= left+fw && under[c] == "" && c == left+fw:
					want.WriteString(" ") // its first half is under the box
				default:
					want.WriteString(under[c])
				}
			}
			if plain := ansi.Strip(got); plain != want.String() || Width(got) != width {
				t.Errorf("box %d wide over %q:\n got %q (%d cells)\nwant %q", fw, bg, plain, Width(got), want.String())
			}
		}
	}
}
