package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/mattn/go-runewidth"

	"github.com/klab-dev/klab/cluster/lab"
)

// stepPrinter prints a long operation's steps as kind does: on a terminal a
// step shows "•" while it runs and is redrawn with ✓ or ✗ when it ends; in
// a log only the end is printed.
type stepPrinter struct {
	mu  sync.Mutex
	w   io.Writer
	tty bool
}

func newStepPrinter(w io.Writer) *stepPrinter {
	return &stepPrinter{w: w, tty: isTerminal(w)}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// progress is a lab.Progress.
func (p *stepPrinter) progress(ev lab.StepEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	title := ev.Title.String()
	switch ev.Phase {
	case lab.StepStarted:
		if p.tty {
			fmt.Fprintf(p.w, " • %s …", title)
		}
		return
	case lab.StepDone:
		p.clearLine()
		fmt.Fprintf(p.w, " ✓ %s (%s)\n", title, formatDuration(ev.Elapsed))
	case lab.StepFailed:
		p.clearLine()
		fmt.Fprintf(p.w, " ✗ %s (%s)\n", title, formatDuration(ev.Elapsed))
	}
}

func (p *stepPrinter) clearLine() {
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// formatDuration rounds a step's duration to what a reader cares about.
func formatDuration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// table prints rows in aligned columns, measuring cells by their width on
// a terminal so that Korean text (two columns per syllable) lines up.
type table struct {
	rows [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], runewidth.StringWidth(c))
		}
	}
	for _, r := range t.rows {
		var b strings.Builder
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-runewidth.StringWidth(c)+3))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}
