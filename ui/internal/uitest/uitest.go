// Package uitest holds what the TUI's tests share: golden files with an
// -update flag (as bubbles' tests do), a fixed rendering environment, and
// fixed observed states to draw.
package uitest

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	_ "github.com/charmbracelet/x/exp/golden" // defines -update
	"github.com/muesli/termenv"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/ui/common"
)

// updating reports whether golden files are rewritten instead of compared
// with: go test ./ui/... -update. The flag is the one teatest's golden
// package defines (one test binary cannot define it twice), imported here
// so that every package of the TUI's tests has it.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// Now is the fixed time of every test.
var Now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// Setup pins rendering for a test: ASCII colour profile (no escape codes
// in golden files), a dark background (no terminal query), the language,
// and a fixed clock. It returns a Common to build panes with.
func Setup(t testing.TB, lang i18n.Lang) *common.Common {
	t.Helper()
	lipgloss.SetColorProfile(termenv.Ascii)
	lipgloss.SetHasDarkBackground(true)
	prev := i18n.Current()
	i18n.SetLang(lang)
	t.Cleanup(func() { i18n.SetLang(prev) })
	c := common.New()
	c.Now = func() time.Time { return Now }
	return c
}

// Golden compares got with testdata/<name>.golden, or writes it with
// -update.
func Golden(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if updating() {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from its golden file (run with -update if the change is right)\n--- got:\n%s\n--- want:\n%s", name, got, want)
	}
}

// CheckFrame fails when the rendered frame is not exactly width×height
// cells: a line too wide would wrap and push everything down, which is
// how a wide Korean character breaks a border.
func CheckFrame(t testing.TB, frame string, width, height int) {
	t.Helper()
	lines := strings.Split(frame, "\n")
	if len(lines) != height {
		t.Errorf("frame has %d lines, want %d", len(lines), height)
	}
	for i, l := range lines {
		if w := lipgloss.Width(l); w != width {
			t.Errorf("line %d is %d cells wide, want %d: %q", i+1, w, width, l)
		}
	}
}

// Sizes are the terminal sizes every view is checked at.
var Sizes = []struct{ W, H int }{{80, 24}, {120, 40}, {200, 60}}

// Langs are the languages every view is checked in.
var Langs = []i18n.Lang{i18n.English, i18n.Korean}
