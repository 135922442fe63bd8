package manifest

import (
	"slices"
	"testing"
)

func TestSplit(t *testing.T) {
	// Each section as number:firstLine-lastLine@contentLine.
	type span struct{ number, first, last, content int }
	tests := []struct {
		name string
		data string
		want []span
	}{
		{"no separator", lines("a: 1", "b: 2"), []span{{1, 1, 2, 1}}},
		{"leading comment is not a document", lines("# c", "---", "a: 1"), []span{{1, 3, 3, 3}}},
		{"leading content is a document", lines("a: 1", "---", "b: 1"), []span{{1, 1, 1, 1}, {2, 3, 3, 3}}},
		{"empty document between separators", lines("a: 1", "---", "---", "b: 1"),
			[]span{{1, 1, 1, 1}, {2, 3, 3, 0}, {3, 4, 4, 4}}},
		{"comment-only document after a separator", lines("---", "# c", "", "---", "b: 1"),
			[]span{{1, 2, 2, 0}, {2, 5, 5, 5}}},
		{"indented separator stays in the document", lines("a: |", "  ---", "  x", "---", "b: 1"),
			[]span{{1, 1, 3, 1}, {2, 5, 5, 5}}},
		{"separator with a comment", lines("a: 1", "--- # next", "b: 1"), []span{{1, 1, 1, 1}, {2, 3, 3, 3}}},
		{"trailing separator", lines("a: 1", "---"), []span{{1, 1, 1, 1}, {2, 3, 3, 0}}},
		{"no final newline", "a: 1\n---\nb: 1", []span{{1, 1, 1, 1}, {2, 3, 3, 3}}},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sections, err := split("f.yaml", []byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			var got []span
			for _, s := range sections {
				got = append(got, span{s.number, s.firstLine, s.lastLine, s.contentLine})
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("split() = %v, want %v", got, tt.want)
			}
		})
	}
}
