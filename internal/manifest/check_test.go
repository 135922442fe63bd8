package manifest

import (
	"errors"
	"strings"
	"testing"

	"github.com/klab-dev/klab/assets/i18n"
)

// lines joins its arguments as the lines of a file, each ending in "\n".
func lines(l ...string) string {
	return strings.Join(l, "\n") + "\n"
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		data string
		want *Error // nil: the file is fine
	}{
		{
			name: "error in document 1",
			data: lines(
				"apiVersion: v1",
				"kind: ConfigMap",
				"metadata:",
				"  name: web",
				"  labels: app: web",
				"data:",
				`  a: "1"`,
			),
			want: &Error{Line: 5, Document: 1, Msg: "mapping values are not allowed in this context"},
		},
		{
			name: "error in document 3 after comments and blank lines",
			data: lines(
				"# The web application.", // 1: not a document of its own
				"---",
				"apiVersion: v1",
				"kind: Service",
				"metadata:",
				"  name: web",
				"---",
				"# the deployment",
				"",
				"apiVersion: apps/v1", // 10
				"kind: Deployment",
				"metadata:",
				"  name: web",
				"---",
				"",
				"# the broken one",
				"apiVersion: v1",
				"kind: ConfigMap",
				"metadata:",
				"  name: cfg", // 20
				"  labels: app: web",
			),
			want: &Error{Line: 21, Document: 3, Msg: "mapping values are not allowed in this context"},
		},
		{
			name: "tab indentation in document 2",
			data: lines(
				"apiVersion: v1",
				"kind: ConfigMap",
				"metadata:",
				"  name: a",
				"---",
				"apiVersion: v1",
				"kind: ConfigMap",
				"metadata:",
				"  name: b",
				"\tlabels: {}",
			),
			want: &Error{Line: 10, Document: 2, Msg: "found a tab character that violates indentation"},
		},
		{
			name: "tab at the start of a key in document 2",
			data: lines(
				"apiVersion: v1",
				"kind: ConfigMap",
				"---",
				"apiVersion: v1",
				"kind: ConfigMap",
				"metadata:",
				"\tname: b",
			),
			want: &Error{Line: 7, Document: 2, Msg: "found character that cannot start any token"},
		},
		{
			name: "wrong indentation",
			data: lines(
				"apiVersion: v1",
				"kind: Pod",
				"metadata:",
				"  name: web",
				"   labels:",
				"    app: web",
			),
			want: &Error{Line: 5, Document: 1, Msg: "mapping values are not allowed in this context"},
		},
		{
			name: "unterminated flow sequence in document 2",
			data: lines(
				"apiVersion: v1",
				"kind: Namespace",
				"---",
				"apiVersion: v1",
				"kind: Pod",
				"spec:",
				"  containers:",
				"  - name: a",
				"    image: [nginx",
				"  - name: b",
			),
			want: &Error{Line: 9, Document: 2, Msg: "did not find expected ',' or ']'"},
		},
		{
			name: "unterminated quote is reported inside its document",
			data: lines(
				"apiVersion: v1",
				"kind: ConfigMap",
				"metadata:",
				`  name: "web`,
				"",
				"---",
				"apiVersion: v1",
				"kind: ConfigMap",
			),
			want: &Error{Line: 4, Document: 1, Msg: "found unexpected end of stream"},
		},
		{
			name: "CRLF line endings",
			data: "apiVersion: v1\r\nkind: Pod\r\n---\r\napiVersion: v1\r\nkind: Pod\r\nmetadata:\r\n  labels: a: b\r\n",
			want: &Error{Line: 7, Document: 2, Msg: "mapping values are not allowed in this context"},
		},
		{
			name: "invalid document separator",
			data: lines(
				"apiVersion: v1",
				"kind: ConfigMap",
				"--- |",
				"apiVersion: v1",
			),
			want: &Error{Line: 3, Document: 2, Msg: "invalid Yaml document separator: |"},
		},
		{
			name: "missing kind in document 2",
			data: lines(
				"apiVersion: v1",
				"kind: ConfigMap",
				"metadata: {name: a}",
				"---",
				"# no kind here",
				"apiVersion: v1",
				"metadata:",
				"  name: b",
			),
			want: &Error{Line: 6, Document: 2, Msg: "kind not set"},
		},
		{
			name: "missing apiVersion and kind",
			data: lines(
				"metadata:",
				"  name: b",
			),
			want: &Error{Line: 1, Document: 1, Msg: "[apiVersion not set, kind not set]"},
		},
		{
			name: "kind that is not a string",
			data: lines(
				"apiVersion: v1",
				"kind: [Pod]",
			),
			want: &Error{Line: 1, Document: 1, Msg: "kind isn't string type"},
		},
		{
			name: "apiVersion that is not a group/version",
			data: lines(
				"apiVersion: apps/v1/beta",
				"kind: Deployment",
			),
			want: &Error{Line: 1, Document: 1, Msg: "unexpected GroupVersion string: apps/v1/beta"},
		},
		{
			name: "a list is not an object",
			data: lines(
				"apiVersion: v1",
				"kind: Pod",
				"---",
				"- a",
				"- b",
			),
			want: &Error{Line: 4, Document: 2, Msg: "invalid object to validate"},
		},
		{
			name: "good multi-document file",
			data: lines(
				"# comments before the first separator",
				"--- # a separator may carry a comment",
				"apiVersion: v1",
				"kind: ConfigMap",
				"metadata:",
				"  name: script",
				"data:",
				"  run.sh: |",
				"    echo one",
				"    ---",
				"    echo two",
				"---",
				"---",
				"# an empty document",
				"---",
				"apiVersion: apps/v1",
				"kind: Deployment",
				"metadata: {name: web}",
				"---",
			),
		},
		{
			name: "null document",
			data: lines("apiVersion: v1", "kind: Namespace", "---", "null"),
		},
		{
			name: "empty file",
			data: "",
		},
		{
			name: "only blank lines and comments",
			data: lines("", "# nothing yet", "   "),
		},
		{
			name: "JSON object",
			data: lines(
				"{",
				`  "apiVersion": "v1",`,
				`  "kind": "ConfigMap",`,
				`  "metadata": {"name": "web"}`,
				"}",
			),
		},
		{
			name: "JSON stream of two objects",
			data: lines(
				`{"apiVersion": "v1", "kind": "ConfigMap"}`,
				`{"apiVersion": "v1", "kind": "Secret"}`,
			),
		},
		{
			name: "JSON syntax error",
			data: lines(
				"{",
				`  "apiVersion": "v1"`,
				`  "kind": "ConfigMap"`,
				"}",
			),
			want: &Error{Line: 3, Document: 1, Msg: `invalid character '"' after object key:value pair`},
		},
		{
			name: "JSON that ends too early",
			data: lines(
				"{",
				`  "apiVersion": "v1",`,
				`  "kind": "ConfigMap",`,
			),
			want: &Error{Line: 3, Document: 1, Msg: "unexpected EOF"},
		},
		{
			// kubectl falls back to YAML, where a trailing comma is allowed.
			name: "JSON with a trailing comma parses as YAML",
			data: lines(
				"{",
				`  "apiVersion": "v1",`,
				`  "kind": "ConfigMap",`,
				"}",
			),
		},
		{
			name: "JSON object without kind",
			data: lines(
				`{"apiVersion": "v1", "kind": "ConfigMap"}`,
				"",
				`  {"apiVersion": "v1"}`,
			),
			want: &Error{Line: 3, Document: 2, Msg: "kind not set"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check("web.yaml", []byte(tt.data))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Check() = %#v, want nil", err)
				}
				return
			}
			var got *Error
			if !errors.As(err, &got) {
				t.Fatalf("Check() = %v, want *Error %+v", err, *tt.want)
			}
			tt.want.File = "web.yaml"
			if *got != *tt.want {
				t.Errorf("Check() = %+v, want %+v", *got, *tt.want)
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	const key = "manifest.err.at"
	e := &Error{File: "web.yaml", Line: 14, Document: 2, Msg: "mapping values are not allowed in this context"}
	tests := []struct {
		name string
		lang i18n.Lang
		want string
	}{
		{"English", i18n.English, "web.yaml:14: (document 2) mapping values are not allowed in this context"},
		{"Korean", i18n.Korean, "web.yaml:14: (2번째 문서) mapping values are not allowed in this context"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.lang.Has(key) {
				t.Skipf("the %s catalogue lacks %s yet", tt.lang, key)
			}
			if got := e.In(tt.lang); got != tt.want {
				t.Errorf("In(%s) = %q, want %q", tt.lang, got, tt.want)
			}
		})
	}
}
