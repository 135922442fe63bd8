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

func TestWrap(t *testing.T) {
	tests := []struct {
		name   string
		text   string
		width  int
		indent string
		want   []string
	}{
		{"fits", "one two", 20, "", []string{"one two"}},
		{"breaks at spaces", "one two three four", 9, "", []string{"one two", "three", "four"}},
		{"indent counts in the width", "one two three", 9, "  ", []string{"  one two", "  three"}},
		{"never narrower than eight cells", "one two three", 2, "", []string{"one two", "three"}},
		{"wide characters take two cells", "가나 다라 마바", 10, "", []string{"가나 다라", "마바"}},
		{"nothing leaves the indent", "   ", 10, "  ", []string{"  "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Wrap(tt.text, tt.width, tt.indent)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("Wrap(%q, %d, %q) = %q, want %q", tt.text, tt.width, tt.indent, got, tt.want)
			}
		})
	}
}

func TestPadLeft(t *testing.T) {
	tests := []struct {
		s     string
		width int
		want  string
	}{
		{"42", 5, "   42"},
		{"가나", 5, " 가나"},
		{"toolong", 4, "too…"},
		{"same", 4, "same"},
	}
	for _, tt := range tests {
		if got := PadLeft(tt.s, tt.width); got != tt.want {
			t.Errorf("PadLeft(%q, %d) = %q, want %q", tt.s, tt.width, got, tt.want)
		}
	}
}
