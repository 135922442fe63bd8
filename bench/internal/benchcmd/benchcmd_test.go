package benchcmd

import (
	"strings"
	"testing"
	"time"
)

func TestMedianTakesTheMiddleOfUnsortedRuns(t *testing.T) {
	for _, c := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{[]time.Duration{3}, 3},
		{[]time.Duration{5, 1, 3}, 3},
		{[]time.Duration{4, 1, 3, 2}, 3},
	} {
		in := append([]time.Duration(nil), c.in...)
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Errorf("Median reordered its input: %v, was %v", c.in, in)
			}
		}
	}
}

func TestTablePrintsMarkdown(t *testing.T) {
	tb := Table{Header: []string{"runtime", "reset"}}
	tb.Row("local", Seconds(1250*time.Millisecond, 2))
	var b strings.Builder
	tb.Print(&b)
	want := "| runtime | reset |\n|---|---|\n| local | 1.25 s |\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}
