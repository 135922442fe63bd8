package styles

import (
	"math"
	"reflect"
	"strconv"
	"testing"

	"github.com/charmbracelet/lipgloss"
)

// luminance is a colour's relative luminance as WCAG 2 defines it.
func luminance(t *testing.T, hex string) float64 {
	t.Helper()
	if len(hex) != 7 || hex[0] != '#' {
		t.Fatalf("colour %q is not #rrggbb", hex)
	}
	var l [3]float64
	for i := range l {
		v, err := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
		if err != nil {
			t.Fatalf("colour %q: %v", hex, err)
		}
		c := float64(v) / 255
		if c <= 0.03928 {
			l[i] = c / 12.92
		} else {
			l[i] = math.Pow((c+0.055)/1.055, 2.4)
		}
	}
	return 0.2126*l[0] + 0.7152*l[1] + 0.0722*l[2]
}

// contrast is the WCAG 2 contrast ratio of two colours (1 to 21).
func contrast(t *testing.T, a, b string) float64 {
	la, lb := luminance(t, a), luminance(t, b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

// foregrounds are a palette's colours that text is drawn in, by name.
func foregrounds(p palette) map[string]lipgloss.AdaptiveColor {
	return map[string]lipgloss.AdaptiveColor{
		"text": p.text, "muted": p.muted, "accent": p.accent, "leader": p.leader, "follower": p.follow,
		"candidate": p.candid, "pre-candidate": p.preCand, "bad": p.bad, "good": p.good,
		"heartbeat": p.beat, "append": p.app,
	}
}

// TestContrastThemeIsLegible: in the projector theme every colour text is
// drawn in stands apart from a black and a white background by at least
// WCAG's 7:1 (level AAA), the muted text included; the standard theme's
// muted greys do not, which is why the theme exists.
func TestContrastThemeIsLegible(t *testing.T) {
	for name, c := range foregrounds(palettes[Contrast]) {
		if r := contrast(t, c.Dark, "#000000"); r < 7 {
			t.Errorf("contrast theme: %s on black is %.1f:1, want at least 7:1", name, r)
		}
		if r := contrast(t, c.Light, "#FFFFFF"); r < 7 {
			t.Errorf("contrast theme: %s on white is %.1f:1, want at least 7:1", name, r)
		}
	}
	// The bars' background is the terminal's own in this theme.
	if bg := palettes[Contrast].barBg; bg.Dark != "#000000" || bg.Light != "#FFFFFF" {
		t.Errorf("contrast theme's bar background is %v, want black and white", bg)
	}
	std := palettes[Standard].muted
	if r := contrast(t, std.Dark, "#000000"); r >= 7 {
		t.Errorf("standard muted on black is already %.1f:1; the contrast theme would change nothing", r)
	}
}

// TestThemes: every theme sets every colour, New builds the theme it is
// asked for, and an unknown name is refused by ParseTheme and drawn in the
// standard theme by New.
func TestThemes(t *testing.T) {
	for _, th := range Themes {
		p, ok := palettes[th]
		if !ok {
			t.Fatalf("theme %s has no palette", th)
		}
		v := reflect.ValueOf(p)
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if f.FieldByName("Light").String() == "" || f.FieldByName("Dark").String() == "" {
				t.Errorf("theme %s: colour %s is not set for both backgrounds", th, v.Type().Field(i).Name)
			}
		}
		if got, ok := ParseTheme(string(th)); !ok || got != th {
			t.Errorf("ParseTheme(%q) = %q, %v", th, got, ok)
		}
		if s := New(th); s.Theme != th {
			t.Errorf("New(%s).Theme = %s", th, s.Theme)
		}
	}
	if _, ok := ParseTheme("neon"); ok {
		t.Error(`ParseTheme("neon") accepted an unknown theme`)
	}
	if s := New("neon"); s.Theme != Standard {
		t.Errorf("New(unknown).Theme = %s, want the standard theme", s.Theme)
	}
}
