package common

import (
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Width is lipgloss.Width, the cells the widest line of s takes, made
// cheap for what the views draw most: ASCII, box drawing, symbols, Hangul
// and SGR escape codes. ansi.StringWidth segments every string into
// grapheme clusters, and a frame measures each of its lines several times
// (a Pad is a Fit and a measure), which made measuring most of a frame's
// cost. A line holding only runes that never join a neighbour into one
// cluster is measured rune by rune here, with the width ansi gives each
// rune; anything else (combining marks, joiners, variation selectors,
// emoji modifiers, controls, escapes other than CSI) goes to ansi, so the
// answer is always the one lipgloss would give.
func Width(s string) int {
	if strings.IndexByte(s, '\n') < 0 {
		return lineWidth(s)
	}
	w := 0
	for _, l := range strings.Split(s, "\n") {
		w = max(w, lineWidth(l))
	}
	return w
}

func lineWidth(s string) int {
	w := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c >= 0x20 && c < 0x7f:
			w++
			i++
			continue
		case c == 0x1b:
			n := csiLen(s[i:])
			if n == 0 {
				return ansi.StringWidth(s)
			}
			i += n
			continue
		case c < 0x80:
			return ansi.StringWidth(s)
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		rw := runeWidth(r)
		if rw < 0 {
			return ansi.StringWidth(s)
		}
		w += rw
		i += size
	}
	return w
}

// csiLen returns the length of the CSI sequence (ESC [ params
// intermediates final) that s starts with, or 0 when s starts with
// anything else.
func csiLen(s string) int {
	if len(s) < 3 || s[1] != '[' {
		return 0
	}
	i := 2
	for i < len(s) && s[i] >= 0x30 && s[i] <= 0x3f {
		i++
	}
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		return i + 1
	}
	return 0
}

// simpleRanges are the blocks whose runes never join a neighbour into one
// grapheme cluster (no extenders, joiners, spacing marks, prepends, jamo
// or regional indicators among them), so a line of them is as wide as the
// sum of its runes.
var simpleRanges = [...][2]rune{
	{0x00a0, 0x02ff}, // Latin-1 and Latin Extended, IPA, spacing modifiers
	{0x2010, 0x2027}, // dashes, quotes, bullets, ellipsis
	{0x2030, 0x205e}, // per mille, primes, punctuation
	{0x2070, 0x20cf}, // super- and subscripts, currency
	{0x2100, 0x2bff}, // letterlike, arrows, maths, technical, boxes, blocks, shapes, symbols
	{0x3000, 0x3029}, // CJK punctuation (U+302A–U+302F are combining marks)
	{0x3030, 0x303f},
	{0x3131, 0x318e}, // Hangul compatibility jamo (they do not compose)
	{0x4e00, 0x9fff}, // CJK ideographs
	{0xac00, 0xd7a3}, // Hangul syllables (two syllables never join)
	{0xff01, 0xff60}, // fullwidth forms
}

// The width of each rune of simpleRanges, asked of ansi once.
var (
	widthsOnce sync.Once
	widthTable [][]int8
)

func runeWidth(r rune) int {
	widthsOnce.Do(func() {
		widthTable = make([][]int8, len(simpleRanges))
		for i, rg := range simpleRanges {
			t := make([]int8, rg[1]-rg[0]+1)
			for j := range t {
				t[j] = int8(ansi.StringWidth(string(rg[0] + rune(j))))
			}
			widthTable[i] = t
		}
	})
	for i, rg := range simpleRanges {
		if r < rg[0] {
			return -1
		}
		if r <= rg[1] {
			return int(widthTable[i][r-rg[0]])
		}
	}
	return -1
}
