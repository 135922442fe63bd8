package lessons

import (
	"strings"
	"testing"

	"github.com/klab-dev/klab/assets/i18n"
)

// withBody returns sample with its first step's body replaced by a
// literal block in each language.
func withBody(t *testing.T, ko, en string) string {
	t.Helper()
	block := func(lang, text string) string {
		var b strings.Builder
		b.WriteString("      " + lang + ": |\n")
		for _, l := range strings.Split(text, "\n") {
			b.WriteString("        " + l + "\n")
		}
		return b.String()
	}
	return strings.Replace(sample, "      ko: 본문\n      en: Body\n", block("ko", ko)+block("en", en), 1)
}

const runtimeBody = "Look at the node's containers.\n::: docker\n`docker ps` lists them.\n:::\n::: local\nThey are processes.\n:::\nThen go on."

func TestRuntimePassages(t *testing.T) {
	ls, err := loadOne(t, "x.yaml", withBody(t, strings.ReplaceAll(runtimeBody, "Then", "그리고"), runtimeBody))
	if err != nil {
		t.Fatal(err)
	}
	body := ls[0].Steps[0].Body
	for _, tt := range []struct {
		rt         string
		want, lose []string
	}{
		{RuntimeDocker, []string{"Look at", "`docker ps` lists them.", "Then go on."}, []string{"processes", ":::", "On the"}},
		{RuntimeLocal, []string{"Look at", "They are processes.", "Then go on."}, []string{"docker ps", ":::", "On the"}},
		{"", []string{"Look at", "*On the Docker runtime:*", "`docker ps` lists them.", "*On the local runtime:*", "They are processes.", "Then go on."}, []string{":::"}},
	} {
		got := body.ForRuntime(i18n.English, tt.rt)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("runtime %q: %q lacks %q", tt.rt, got, w)
			}
		}
		for _, l := range tt.lose {
			if strings.Contains(got, l) {
				t.Errorf("runtime %q: %q has %q", tt.rt, got, l)
			}
		}
	}
	if got := body.ForRuntime(i18n.Korean, ""); !strings.Contains(got, "*Docker 런타임에서는:*") || !strings.Contains(got, "그리고 go on.") {
		t.Errorf("Korean without a runtime: %q", got)
	}
	// Text without passages is returned as it is.
	if got := ls[0].Steps[1].Body.ForRuntime(i18n.English, RuntimeDocker); got != "Body" {
		t.Errorf("plain body = %q", got)
	}
}

func TestRuntimePassageErrors(t *testing.T) {
	// Line 9 of the file is "body:", 10 "ko: |", and the Korean text
	// starts on line 11; the English one follows it.
	for _, tc := range []struct {
		name, ko, en string
		want, key    string
	}{
		{"unknown runtime", "a\n::: podman\nb\n:::", "a",
			`x.yaml:12: steps[0].body.ko: unknown runtime "podman" after ":::" (runtimes: docker, local)`, "lessons.err.runtime-unknown"},
		{"unclosed", "a", "a\nb\n::: docker\nc",
			`x.yaml:15: steps[0].body.en: runtime passage "docker" is never closed with a line ":::"`, "lessons.err.runtime-unclosed"},
		{"stray", ":::\na", "a",
			`x.yaml:11: steps[0].body.ko: ":::" closes a runtime passage, but none is open`, "lessons.err.runtime-stray"},
		{"nested", "::: docker\n::: local\n:::\n:::", "a",
			`x.yaml:12: steps[0].body.ko: runtime passage "local" opens inside the "docker" passage opened on line 1 of this text; passages do not nest`, "lessons.err.runtime-nested"},
		{"a passage left untranslated", "a\n::: docker\nb\n:::", "a",
			`x.yaml:10:7: steps[0].body: the Korean and the English text have different runtime passages (ko: [docker], en: [])`, "lessons.err.runtime-mismatch"},
		{"passages in another order", "::: local\nb\n:::\n::: docker\nc\n:::", "::: docker\nc\n:::\n::: local\nb\n:::",
			`x.yaml:10:7: steps[0].body: the Korean and the English text have different runtime passages (ko: [local, docker], en: [docker, local])`, "lessons.err.runtime-mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadOne(t, "x.yaml", withBody(t, tc.ko, tc.en))
			errs := LoadErrors(err)
			if len(errs) != 1 {
				t.Fatalf("got %d errors (%v), want 1", len(errs), err)
			}
			if got := renderError(t, i18n.English, errs[0]); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if errs[0].Msg.Key != tc.key {
				t.Errorf("key %s, want %s", errs[0].Msg.Key, tc.key)
			}
			if ko := renderError(t, i18n.Korean, errs[0]); !strings.HasPrefix(ko, errs[0].Position()+": ") {
				t.Errorf("Korean rendering %q", ko)
			}
		})
	}
}
