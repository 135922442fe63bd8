package lessons

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/klab-dev/klab/assets/i18n"
)

// format returns key's format in language l.
func format(t testing.TB, l i18n.Lang, key string) (string, bool) {
	t.Helper()
	if !l.Has(key) {
		return "", false
	}
	return l.T(key), true
}

// render renders a message in language l.
func render(t testing.TB, l i18n.Lang, m i18n.Message) string {
	t.Helper()
	f, ok := format(t, l, m.Key)
	if !ok {
		t.Fatalf("message %q is not in the %s catalogue", m.Key, l)
	}
	if len(m.Args) == 0 {
		return f
	}
	return fmt.Sprintf(f, m.Args...)
}

// renderError renders a LoadError as Error would with the complete
// catalogue.
func renderError(t testing.TB, l i18n.Lang, e *LoadError) string {
	return e.Position() + ": " + render(t, l, e.Msg)
}

// sourceKey finds message keys in this package's code.
var sourceKey = regexp.MustCompile(`i18n\.(?:T|M|NewError|Wrap)\((?:[^"()]*(?:\([^()]*\))?, )?"([a-z0-9.\-]+)"|Key: "([a-z0-9\-]+\.[a-z0-9.\-]+)"`)

// TestMessagesExist requires every message key of the package to exist in
// both languages, with the same verbs for the same arguments.
func TestMessagesExist(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range sourceKey.FindAllStringSubmatch(string(src), -1) {
			used[m[1]+m[2]] = true
		}
	}
	if len(used) < 50 {
		t.Fatalf("found only %d keys in the source; is the pattern broken?", len(used))
	}
	var keys []string
	for k := range used {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		en, okEn := format(t, i18n.English, k)
		ko, okKo := format(t, i18n.Korean, k)
		if !okEn || !okKo {
			t.Errorf("%s: missing in English (%v) or Korean (%v)", k, !okEn, !okKo)
			continue
		}
		if a, b := verbs(en), verbs(ko); !equalVerbs(a, b) {
			t.Errorf("%s: English verbs %v, Korean %v", k, a, b)
		}
	}
}

var verbPattern = regexp.MustCompile(`%(?:\[(\d+)\])?[-+# 0]*\d*(?:\.\d+)?([a-zA-Z%])`)

// verbs maps each argument (from 1) to its verb.
func verbs(format string) map[int]byte {
	out := map[int]byte{}
	next := 1
	for _, m := range verbPattern.FindAllStringSubmatch(format, -1) {
		if m[2] == "%" {
			continue
		}
		if m[1] != "" {
			fmt.Sscanf(m[1], "%d", &next)
		}
		out[next] = m[2][0]
		next++
	}
	return out
}

func equalVerbs(a, b map[int]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
