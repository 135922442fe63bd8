package i18n

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCataloguesComplete fails when a key exists in one language only.
func TestCataloguesComplete(t *testing.T) {
	for _, a := range Langs {
		if len(Keys(a)) == 0 {
			t.Fatalf("catalogue %s is empty or failed to load", a)
		}
		for _, b := range Langs {
			for _, k := range Keys(a) {
				if !b.Has(k) {
					t.Errorf("key %q is in %s.json but missing from %s.json", k, a, b)
				}
			}
		}
	}
}

// TestVerbsMatch fails when a translation disagrees with English on which
// verb formats an argument, or leaves an argument out.
func TestVerbsMatch(t *testing.T) {
	for _, key := range Keys(English) {
		en, err := verbs(catalogues[English][key])
		if err != nil {
			t.Errorf("%s (en): %v", key, err)
			continue
		}
		for _, l := range Langs[1:] {
			got, err := verbs(catalogues[l][key])
			if err != nil {
				t.Errorf("%s (%s): %v", key, l, err)
				continue
			}
			if fmt.Sprint(got) != fmt.Sprint(en) {
				t.Errorf("%s: %s uses verbs %v, en uses %v", key, l, got, en)
			}
		}
		// Every argument must be used somewhere, or its position is a
		// silent bug waiting for a translator.
		for i := 1; i <= len(en); i++ {
			if len(en[i]) == 0 {
				t.Errorf("%s: argument %d is never used", key, i)
			}
		}
	}
}

// TestMessagesRender renders every message with arguments of the types its
// verbs want and looks for fmt's complaints (%!d(string=...), %!(EXTRA ...)).
func TestMessagesRender(t *testing.T) {
	for _, key := range Keys(English) {
		v, _ := verbs(catalogues[English][key])
		args := make([]any, len(v))
		for i := range args {
			switch {
			case slices.Contains(v[i+1], 'd'):
				args[i] = 3
			case slices.Contains(v[i+1], 'g'):
				args[i] = 1.5
			default:
				args[i] = "x"
			}
		}
		for _, l := range Langs {
			if out := l.T(key, args...); strings.Contains(out, "%!") {
				t.Errorf("%s (%s) renders badly: %s", key, l, out)
			}
		}
	}
}

// verbs maps each argument number (1-based) of a format to the verbs that
// format it, following fmt's rules for explicit indexes ("%[2]d").
func verbs(format string) (map[int][]rune, error) {
	out := map[int][]rune{}
	arg := 1
	rs := []rune(format)
	for i := 0; i < len(rs); i++ {
		if rs[i] != '%' {
			continue
		}
		i++
		if i < len(rs) && rs[i] == '%' {
			continue
		}
		for i < len(rs) && strings.ContainsRune("+-# 0", rs[i]) {
			i++
		}
		if i < len(rs) && rs[i] == '[' {
			end := i + 1
			for end < len(rs) && rs[end] != ']' {
				end++
			}
			var n int
			if _, err := fmt.Sscanf(string(rs[i+1:end]), "%d", &n); err != nil || end == len(rs) {
				return nil, fmt.Errorf("bad argument index in %q", format)
			}
			arg, i = n, end+1
		}
		for i < len(rs) && (rs[i] >= '0' && rs[i] <= '9' || rs[i] == '.') {
			i++
		}
		if i >= len(rs) {
			return nil, fmt.Errorf("format %q ends inside a verb", format)
		}
		v := rs[i]
		if !slices.Contains(out[arg], v) {
			out[arg] = append(out[arg], v)
			slices.Sort(out[arg])
		}
		arg++
	}
	// Fill the gaps so that an unused argument shows as an empty entry.
	maxArg := 0
	for n := range out {
		maxArg = max(maxArg, n)
	}
	for n := 1; n <= maxArg; n++ {
		if _, ok := out[n]; !ok {
			out[n] = nil
		}
	}
	return out, nil
}

func TestVerbsParser(t *testing.T) {
	tests := []struct {
		name   string
		format string
		want   string
	}{
		{"plain", "no verbs", "map[]"},
		{"percent", "100%% sure", "map[]"},
		{"sequence", "%s has %d", "map[1:[115] 2:[100]]"},
		{"explicit", "%[2]d then %[1]q then %s", "map[1:[113] 2:[100 115]]"},
		{"width", "%-10s|%5.2f", "map[1:[115] 2:[102]]"},
		{"gap", "%[2]s", "map[1:[] 2:[115]]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := verbs(tt.format)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != tt.want {
				t.Errorf("verbs(%q) = %v, want %s", tt.format, got, tt.want)
			}
		})
	}
}

// TestSourceKeysExist scans the module's Go files for message keys written
// as literals (i18n.T("..."), i18n.NewError("...") ...) and checks that the
// catalogue has each one.
func TestSourceKeysExist(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile(`i18n\.(?:T|M|NewError|Wrap)\((?:[^"()]*(?:\([^()]*\))?, )?"([a-z0-9.\-]+)"|i18n\.Error\{Key: "([a-z0-9\-]+\.[a-z0-9.\-]+)"|\{\{T "([a-z0-9.\-]+)"`)
	found := 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range call.FindAllStringSubmatch(string(data), -1) {
			key := m[1] + m[2] + m[3]
			if strings.HasSuffix(key, ".") {
				continue // a key built at run time; its callers test it
			}
			found++
			if !English.Has(key) {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s uses key %q, which the catalogue lacks", rel, key)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 50 {
		t.Errorf("found only %d keys in the source; is the pattern still right?", found)
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want Lang
	}{
		{"nothing set", nil, English},
		{"KLAB_LANG wins", map[string]string{"KLAB_LANG": "ko", "LANG": "en_US.UTF-8"}, Korean},
		{"KLAB_LANG english", map[string]string{"KLAB_LANG": "en", "LANG": "ko_KR.UTF-8"}, English},
		{"KLAB_LANG unknown falls through", map[string]string{"KLAB_LANG": "fr", "LANG": "ko_KR.UTF-8"}, Korean},
		{"LANG korean", map[string]string{"LANG": "ko_KR.UTF-8"}, Korean},
		{"LC_ALL before LANG", map[string]string{"LC_ALL": "en_US.UTF-8", "LANG": "ko_KR.UTF-8"}, English},
		{"LC_MESSAGES before LANG", map[string]string{"LC_MESSAGES": "ko_KR", "LANG": "C"}, Korean},
		{"first set decides", map[string]string{"LC_ALL": "fr_FR.UTF-8", "LANG": "ko_KR.UTF-8"}, English},
		{"C locale", map[string]string{"LANG": "C.UTF-8"}, English},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"KLAB_LANG", "LC_ALL", "LC_MESSAGES", "LANG"} {
				t.Setenv(k, tt.env[k])
			}
			if got := Detect(); got != tt.want {
				t.Errorf("Detect() = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestRenderFollowsLanguage(t *testing.T) {
	defer SetLang(Current())
	msg := M("status.none")
	err := Wrap(errors.New("boom"), "lab.err.remove", "/tmp/x")

	SetLang(English)
	if got := msg.String(); got != "none" {
		t.Errorf("en message = %q", got)
	}
	if got := err.Error(); got != "remove /tmp/x: boom" {
		t.Errorf("en error = %q", got)
	}
	SetLang(Korean)
	if got := msg.String(); got != "없음" {
		t.Errorf("ko message = %q", got)
	}
	if got := err.Error(); got != "/tmp/x 삭제 실패: boom" {
		t.Errorf("ko error = %q", got)
	}
	if got := err.In(English); got != "remove /tmp/x: boom" {
		t.Errorf("In(en) = %q", got)
	}
	SetLang("xx") // unsupported: ignored
	if Current() != Korean {
		t.Errorf("SetLang accepted an unsupported language")
	}
}

func TestErrorIs(t *testing.T) {
	sentinel := &Error{Key: "lab.err.not-running"}
	err := fmt.Errorf("connect: %w", NewError("lab.err.not-running", "demo"))
	if !errors.Is(err, sentinel) {
		t.Errorf("errors.Is did not match a sentinel with the same key")
	}
	if errors.Is(err, &Error{Key: "lab.err.not-found"}) {
		t.Errorf("errors.Is matched a sentinel with another key")
	}
}

func TestMissingKeyIsVisible(t *testing.T) {
	if got := English.T("no.such.key"); got != "no.such.key" {
		t.Errorf("missing key rendered as %q", got)
	}
}

// TestCountForms: a count of one takes the .one form where a language has
// it; other counts, and a language without it, take the key's.
func TestCountForms(t *testing.T) {
	for _, tt := range []struct {
		lang Lang
		n    int
		want string
	}{
		{English, 1, "1 master"},
		{English, 3, "3 masters"},
		{English, 0, "0 masters"},
		{Korean, 1, Korean.T("ui.ov.masters", 1)},
	} {
		if got := tt.lang.N("ui.ov.masters", tt.n, tt.n); got != tt.want {
			t.Errorf("%s N(ui.ov.masters, %d) = %q, want %q", tt.lang, tt.n, got, tt.want)
		}
	}
	if got := English.N("ui.home.lessons", 1); got != English.T("ui.home.lessons") {
		t.Errorf("a key without a .one form: %q", got)
	}
}
