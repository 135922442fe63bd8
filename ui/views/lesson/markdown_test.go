package lesson

import "testing"

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
