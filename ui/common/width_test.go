package common

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
)

// TestWidthOfEverySimpleRune checks the fast path against ansi rune by
// rune, and that no rune of the fast path joins its neighbours: between
// ASCII letters, and beside a sample of the other runes.
func TestWidthOfEverySimpleRune(t *testing.T) {
	var all []rune
	for _, rg := range simpleRanges {
		for r := rg[0]; r <= rg[1]; r++ {
			all = append(all, r)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, r := range all {
		s := string(r)
		if got, want := Width(s), ansi.StringWidth(s); got != want {
			t.Fatalf("Width(%U) = %d, ansi says %d", r, got, want)
		}
		s = "a" + string(r) + "b"
		if got, want := Width(s), ansi.StringWidth(s); got != want {
			t.Fatalf("Width(a%Ub) = %d, ansi says %d", r, got, want)
		}
		for range 8 {
			p := all[rng.IntN(len(all))]
			s := string(r) + string(p)
			if got, want := Width(s), ansi.StringWidth(s); got != want {
				t.Fatalf("Width(%U %U) = %d, ansi says %d", r, p, got, want)
			}
		}
	}
}

func TestWidth(t *testing.T) {
	lipgloss.SetColorProfile(termenv.TrueColor)
	t.Cleanup(func() { lipgloss.SetColorProfile(termenv.Ascii) })
	styled := lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("#ff8800")).Render("리더 ★ leader")
	for _, s := range []string{
		"",
		"plain",
		styled,
		styled + "\n" + "a much longer second line │ ─ ┊ ▮▯",
		"한국어 텍스트와 English",
		"e\u0301 combining",          // a combining mark: ansi's path
		"👍🏽 modifier",                // emoji modifier
		"☺\ufe0f selector",           // variation selector
		"\x1b]8;;http://x\x1b\\link", // OSC: ansi's path
		"tab\tcontrol",
		"\x1b[", // a cut escape
		"fullwidth ＡＢ",
	} {
		if got, want := Width(s), lipgloss.Width(s); got != want {
			t.Errorf("Width(%q) = %d, lipgloss says %d", s, got, want)
		}
	}
}

func FuzzWidth(f *testing.F) {
	for _, s := range []string{"a", "리더", "\x1b[1;38;5;208mx\x1b[0m", "e\u0301", "│─┊", "a\nbb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Width(s), lipgloss.Width(s); got != want {
			t.Errorf("Width(%q) = %d, lipgloss says %d", s, got, want)
		}
	})
}

func BenchmarkWidth(b *testing.B) {
	line := strings.Repeat("\x1b[1m│\x1b[0m leader 리더 term 12 ▮▮▮▯▯┊▯ ", 4)
	b.Run("common", func(b *testing.B) {
		for range b.N {
			Width(line)
		}
	})
	b.Run("lipgloss", func(b *testing.B) {
		for range b.N {
			lipgloss.Width(line)
		}
	})
}
