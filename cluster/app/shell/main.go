package shell

import (
	"context"
	"os"
	"os/signal"
	"path"
	"slices"
	"sort"

	"github.com/mattn/go-isatty"
)

// Applets are the names under which the shell's binary runs a tool (and
// sh for the shell), as busybox's links: an image links each to the
// binary, and Main runs the one argv[0] names.
func Applets() []string {
	names := make([]string, 0, len(tools)+1)
	for name := range tools {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// IsApplet tells whether argv0 names a tool or the shell.
func IsApplet(argv0 string) bool {
	_, ok := tools[path.Base(argv0)]
	return ok
}

// Main runs the applet argv[0] names inside a container, on the
// process's own streams and filesystem, and returns the exit code. On a
// terminal the shell is interactive; the terminal (a pty) edits lines
// and echoes itself, and its Ctrl-C interrupts the command running.
func Main(argv []string) int {
	ctx := context.Background()
	hostname, _ := os.Hostname()
	dir, err := os.Getwd()
	if err != nil {
		dir = "/"
	}
	cfg := Config{
		Env: os.Environ(), Dir: dir, Hostname: hostname,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Terminal: isatty.IsTerminal(os.Stdin.Fd()) && isatty.IsTerminal(os.Stdout.Fd()),
	}
	if cfg.Terminal {
		interrupts := make(chan os.Signal, 1)
		signal.Notify(interrupts, os.Interrupt)
		cfg.interrupts = interrupts
	}
	argv = slices.Clone(argv)
	argv[0] = path.Base(argv[0])
	code, err := Run(ctx, cfg, argv)
	if err != nil {
		os.Stderr.WriteString(argv[0] + ": " + err.Error() + "\n")
		return ExitNotFound
	}
	return code
}
