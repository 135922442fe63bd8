// Package benchcmd holds what the benchmark commands that run klab clusters
// share: the klab binary their Docker clusters run, the median of a few
// runs, and the Markdown tables they print.
package benchcmd

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// KlabBinary returns $KLAB_BINARY, else a static linux klab binary built
// now into a temporary folder: what a Docker cluster's containers run.
func KlabBinary() (string, error) {
	if p := os.Getenv("KLAB_BINARY"); p != "" {
		return p, nil
	}
	dir, err := os.MkdirTemp("", "kbench-bin")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "klab")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", path, "github.com/klab-dev/klab/cmd/klab")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build klab: %w", err)
	}
	return path, nil
}

// Median returns the middle of d (the upper middle of an even count); 0
// for none.
func Median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// Table is a Markdown table.
type Table struct {
	Header []string
	rows   [][]string
}

// Row adds a row, one cell per column.
func (t *Table) Row(cells ...string) { t.rows = append(t.rows, cells) }

// Print writes the table to w.
func (t *Table) Print(w io.Writer) {
	line := func(cells []string) { fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | ")) }
	line(t.Header)
	sep := make([]string, len(t.Header))
	for i := range sep {
		sep[i] = "---"
	}
	fmt.Fprintf(w, "|%s|\n", strings.Join(sep, "|"))
	for _, r := range t.rows {
		line(r)
	}
}

// Seconds formats d as seconds with the given decimals: "1.25 s".
func Seconds(d time.Duration, decimals int) string {
	return fmt.Sprintf("%.*f s", decimals, d.Seconds())
}
