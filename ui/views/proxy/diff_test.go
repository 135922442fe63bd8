package proxy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// show writes a diff as the view marks it: "+x", "-x", " x", "~n".
func show(d []diffLine) string {
	var out []string
	for _, l := range d {
		switch l.op {
		case lineSame:
			out = append(out, " "+l.text)
		case lineAdded:
			out = append(out, "+"+l.text)
		case lineRemoved:
			out = append(out, "-"+l.text)
		case lineFolded:
			out = append(out, fmt.Sprintf("~%d", l.folded))
		case lineFoldedRemoved:
			out = append(out, fmt.Sprintf("-~%d", l.folded))
		}
	}
	return strings.Join(out, ",")
}

func TestDiffLines(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want string
	}{
		{"same", "a b c", "a b c", " a, b, c"},
		{"added", "a c", "a b c", " a,+b, c"},
		{"removed", "a b c", "a c", " a,-b, c"},
		{"replaced", "a b c", "a x c", " a,-b,+x, c"},
		{"from nothing", "", "a b", "+a,+b"},
		{"to nothing", "a b", "", "-a,-b"},
		{"mode switch", "i1 i2", "v1", "-i1,-i2,+v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := show(diffLines(strings.Fields(tt.a), strings.Fields(tt.b))); got != tt.want {
				t.Errorf("diff %q → %q = %s, want %s", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

func TestFold(t *testing.T) {
	lines := strings.Fields("a b c d e f g h i j")
	changed := append([]string{}, lines...)
	changed[5] = "F"
	got := show(fold(diffLines(lines, changed), 2))
	if want := "~3, d, e,-f,+F, g, h,~2"; got != want {
		t.Errorf("fold = %s, want %s", got, want)
	}
	// Two changes close together keep the lines between them.
	changed[8] = "I"
	got = show(fold(diffLines(lines, changed), 2))
	if want := "~3, d, e,-f,+F, g, h,-i,+I, j"; got != want {
		t.Errorf("fold = %s, want %s", got, want)
	}
	if a, r := diffCounts(diffLines(lines, changed)); a != 2 || r != 2 {
		t.Errorf("counts +%d −%d, want +2 −2", a, r)
	}
	// Nothing kept: the old lines fold into one and the new ones show.
	switched := fold(diffLines(strings.Fields("i1 i2 i3"), strings.Fields("v1 v2")), 2)
	if got, want := show(switched), "-~3,+v1,+v2"; got != want {
		t.Errorf("fold of a rewrite = %s, want %s", got, want)
	}
	if a, r := diffCounts(switched); a != 2 || r != 3 {
		t.Errorf("a folded rewrite counts +%d −%d, want +2 −3", a, r)
	}
}

func TestWrap(t *testing.T) {
	tests := []struct {
		name  string
		line  string
		width int
		want  []string
	}{
		{"fits", "-A X -j Y", 20, []string{"-A X -j Y"}},
		{"at spaces, indented", "-A KUBE-SVC -m comment -j KUBE-SEP", 16, []string{"-A KUBE-SVC -m", "    comment -j", "    KUBE-SEP"}},
		{"keeps its own indent", "    elements = { a, b }", 20, []string{"    elements = { a,", "        b }"}},
		{"cuts a long word", "x 0123456789abcdef", 10, []string{"x", "    012345", "    6789ab", "    cdef"}},
		{"too narrow to indent", "    elements = { a, b }", 12, []string{"elements = {", "a, b }"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := wrap(tt.line, tt.width, 4)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("wrap(%q, %d) = %q, want %q", tt.line, tt.width, got, tt.want)
			}
			for _, row := range got {
				if ansi.StringWidth(row) > tt.width {
					t.Errorf("row %q is wider than %d", row, tt.width)
				}
			}
		})
	}
}

func TestBar(t *testing.T) {
	for _, tt := range []struct {
		count, full, width int
		want               string
	}{
		{10, 10, 4, "████"},
		{5, 10, 4, "██"},
		{1, 10, 4, "▍"},   // 3.2 eighths
		{1, 1000, 4, "▏"}, // one answer never vanishes
		{0, 10, 4, ""},
	} {
		if got := bar(tt.count, tt.full, tt.width); got != tt.want {
			t.Errorf("bar(%d, %d, %d) = %q, want %q", tt.count, tt.full, tt.width, got, tt.want)
		}
	}
}
