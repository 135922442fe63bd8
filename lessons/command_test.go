package lessons

import (
	"errors"
	"strings"
	"testing"

	"github.com/klab-dev/klab/assets/i18n"
)

func TestSplitCommand(t *testing.T) {
	cases := []struct {
		line string
		want []string
		err  string // message key
	}{
		{line: "klab kubectl get nodes", want: []string{"klab", "kubectl", "get", "nodes"}},
		{line: "  klab\tstatus  ", want: []string{"klab", "status"}},
		{line: "", want: nil},
		{line: `klab kubectl get pods -o jsonpath='{.items[*].metadata.name}'`, want: []string{"klab", "kubectl", "get", "pods", "-o", "jsonpath={.items[*].metadata.name}"}},
		{line: `klab etcdctl put k "a \"quoted\" value"`, want: []string{"klab", "etcdctl", "put", "k", `a "quoted" value`}},
		{line: `klab etcdctl put k ''`, want: []string{"klab", "etcdctl", "put", "k", ""}},
		{line: `klab etcdctl put k a\ b`, want: []string{"klab", "etcdctl", "put", "k", "a b"}},
		{line: `klab etcdctl put k 'a|b;c&d'`, want: []string{"klab", "etcdctl", "put", "k", "a|b;c&d"}},
		{line: "klab status | cat", err: "lessons.err.cmd-operator"},
		{line: "klab status > out", err: "lessons.err.cmd-operator"},
		{line: "klab chaos kill leader && klab status", err: "lessons.err.cmd-operator"},
		{line: "klab status; klab status", err: "lessons.err.cmd-operator"},
		{line: `klab etcdctl put k "v`, err: "lessons.err.cmd-quote"},
		{line: `klab etcdctl put k v\`, err: "lessons.err.cmd-quote"},
	}
	for _, tc := range cases {
		got, err := SplitCommand(tc.line)
		if tc.err != "" {
			var ie *i18n.Error
			if !errors.As(err, &ie) || ie.Key != tc.err {
				t.Errorf("SplitCommand(%q) error %v, want %s", tc.line, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(got, "\x00") != strings.Join(tc.want, "\x00") || len(got) != len(tc.want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", tc.line, got, err, tc.want)
		}
	}
}

func TestCommandLineQuotesBack(t *testing.T) {
	args := []string{"klab", "etcdctl", "put", "k", "it's a value", ""}
	line := commandLine(args)
	back, err := SplitCommand(line)
	if err != nil || strings.Join(back, "\x00") != strings.Join(args, "\x00") {
		t.Errorf("%q splits back to %q, %v", line, back, err)
	}
}

func TestEtcdWrite(t *testing.T) {
	cases := []struct {
		args      string
		verb, key string
		ok        bool
	}{
		{"klab etcdctl put /k v", "put", "/k", true},
		{"etcdctl del /k", "del", "/k", true},
		{"klab etcdctl --endpoints http://a:2379 put /k v", "put", "/k", true},
		{"klab etcdctl --endpoints=http://a:2379 -w json put /k v", "put", "/k", true},
		{"klab etcdctl --name lab put /k v", "put", "/k", true},
		{"klab etcdctl put --prev-kv /k v", "put", "/k", true},
		{"klab etcdctl txn", "txn", "", true},
		{"klab etcdctl get /k", "", "", false},
		{"klab kubectl put /k", "", "", false},
		{"klab etcdctl", "", "", false},
	}
	for _, tc := range cases {
		verb, key, ok := etcdWrite(strings.Fields(tc.args))
		if verb != tc.verb || key != tc.key || ok != tc.ok {
			t.Errorf("etcdWrite(%s) = %q, %q, %v; want %q, %q, %v", tc.args, verb, key, ok, tc.verb, tc.key, tc.ok)
		}
	}
}
