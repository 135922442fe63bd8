package manifest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.yaml", "b.yml", "c.json", "notes.txt", "sub/d.yaml", "sub/deeper/e.yaml"} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, filepath.Join(dir, n))
		}
		return out
	}
	tests := []struct {
		name      string
		args      []string
		recursive bool
		want      []string
		wantErr   string
	}{
		{name: "a file", args: in("a.yaml"), want: in("a.yaml")},
		{name: "a file named on the command line keeps any extension", args: in("notes.txt"), want: in("notes.txt")},
		{name: "a directory, not recursive", args: []string{dir}, want: in("a.yaml", "b.yml", "c.json")},
		{name: "a directory, recursive", args: []string{dir}, recursive: true,
			want: in("a.yaml", "b.yml", "c.json", "sub/d.yaml", "sub/deeper/e.yaml")},
		{name: "stdin and URLs are skipped", args: []string{"-", "https://example.com/web.yaml", "http://example.com/x.yaml"}},
		{name: "a glob pattern", args: in("*.y*ml"), want: in("a.yaml", "b.yml")},
		{name: "several arguments in order", args: append(in("sub"), in("c.json")...), want: in("sub/d.yaml", "c.json")},
		{name: "a missing path", args: in("missing.yaml"),
			wantErr: `the path "` + filepath.Join(dir, "missing.yaml") + `" does not exist`},
		{name: "a bad pattern", args: in("[x"),
			wantErr: `pattern "` + filepath.Join(dir, "[x") + `" is not valid: syntax error in pattern`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Files(tt.args, tt.recursive)
			if gotErr := errString(err); gotErr != tt.wantErr {
				t.Fatalf("Files() error = %q, want %q", gotErr, tt.wantErr)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Files() = %v, want %v", got, tt.want)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
