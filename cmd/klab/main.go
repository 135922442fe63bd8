// Command klab is the klab lab: the CLI, and, in its hidden `component`
// role, every cluster component. See the README for the commands.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/app/shell"
)

// Set at build time by the Makefile (-ldflags -X).
var (
	version = "dev"
	buildID = "unknown"
)

func main() {
	// In the klab/app image, /bin/sh, /bin/ls, ... are links to this
	// binary: run the tool the name says, as busybox does.
	if shell.IsApplet(os.Args[0]) {
		os.Exit(shell.Main(os.Args))
	}
	i18n.SetLang(i18n.Detect())
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		var exit exitError
		if errors.As(err, &exit) {
			return exit.code
		}
		fmt.Fprintln(stderr, i18n.T("cli.error", err))
		return 1
	}
	return 0
}
