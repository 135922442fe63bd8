package lesson

import (
	"strings"
	"testing"

	"github.com/klab-dev/klab/ui/common"
)

func TestUnwrapListItems(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "a wrapped item is joined",
			in:   "- a **candidate** collects votes, which adds a\n  step before that.\n- next",
			want: "- a **candidate** collects votes, which adds a step before that.\n- next"},
		{name: "a numbered item is joined",
			in:   "1. one\n   more\n2) two\n   more",
			want: "1. one more\n2) two more"},
		{name: "a nested item stays on its line",
			in:   "- outer\n  - inner\n    wrapped",
			want: "- outer\n  - inner wrapped"},
		{name: "a paragraph is left to glamour",
			in:   "a paragraph\n  indented line",
			want: "a paragraph\n  indented line"},
		{name: "a blank line ends the item",
			in:   "- item\n\n    code",
			want: "- item\n\n    code"},
		{name: "fenced code is left alone",
			in:   "- item\n  ```\n  klab status\n  ```",
			want: "- item\n  ```\n  klab status\n  ```"},
		{name: "a hard break is kept",
			in:   "- item  \n  next line\n- b\\\n  c",
			want: "- item  \n  next line\n- b\\\n  c"},
		{name: "a line without indent ends the item",
			in:   "- item\nlazy",
			want: "- item\nlazy"},
		{name: "emphasis is not a bullet",
			in:   "*not a list*\n  indented",
			want: "*not a list*\n  indented"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := unwrapListItems(tt.in); got != tt.want {
				t.Errorf("unwrapListItems(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestUnwrapParagraphs(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "a paragraph's lines are joined",
			in:   "one line\nand the next\n\nanother",
			want: "one line and the next\n\nanother"},
		{name: "indented code stays a line per command",
			in:   "Run:\n\n    klab status\n    klab etcdctl get /a\n\nThen",
			want: "Run:\n\n    klab status\n    klab etcdctl get /a\n\nThen"},
		{name: "fenced code is left alone",
			in:   "```\na\nb\n```",
			want: "```\na\nb\n```"},
		{name: "a lazy line joins its item",
			in:   "- item\nlazy\n- next",
			want: "- item lazy\n- next"},
		{name: "headings, quotes, tables and rules stay",
			in:   "text\n# head\ntext\n> quote\ntext\n| a | b |\ntext\n---",
			want: "text\n# head\ntext\n> quote\ntext\n| a | b |\ntext\n---"},
		{name: "a hard break is kept",
			in:   "a  \nb\nc\\\nd",
			want: "a  \nb c\\\nd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := unwrapParagraphs(tt.in); got != tt.want {
				t.Errorf("unwrapParagraphs(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestWrapUnder(t *testing.T) {
	tests := []struct {
		in    string
		width int
		want  []string
	}{
		{"• a bullet that wraps", 12, []string{"• a bullet", "  that wraps"}},
		{"│ a quote that wraps", 12, []string{"│ a quote", "│ that wraps"}},
		{"12. a number wraps", 12, []string{"12. a number", "    wraps"}},
		{"  klab etcdctl get /x", 16, []string{"  klab etcdctl", "  get /x"}},
		{"노드가 죽으면 파드가", 12, []string{"노드가", "죽으면", "파드가"}},
		{"short", 12, []string{"short"}},
	}
	for _, tt := range tests {
		got := wrapUnder(tt.in, tt.width)
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("wrapUnder(%q, %d) = %q, want %q", tt.in, tt.width, got, tt.want)
		}
		for _, l := range got {
			if common.Width(l) > tt.width {
				t.Errorf("wrapUnder(%q, %d): %q is %d cells wide", tt.in, tt.width, l, common.Width(l))
			}
		}
	}
}
