package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/lessons/live"
)

// childWaitDelay bounds the wait for a child's output once it has exited
// or been killed.
const childWaitDelay = 5 * time.Second

// runner runs klab command lines for a lesson (or the TUI's command line)
// the way the klab binary would run them from a shell: same commands, same
// output, same exit codes, one command at a time.
type runner struct {
	// exe is klab's binary, which runs the commands that must have a
	// process of their own.
	exe string
	// dir is those commands' working directory; empty is klab's own.
	dir string
	mu  sync.Mutex
}

// newRunner returns a live.Runner that runs commands in this process,
// except those ownProcess names, which run as a child process of exe
// (klab's own binary; empty means os.Executable).
func newRunner(exe string) live.Runner {
	return (&runner{exe: exe}).run
}

func (r *runner) run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) < 2 || args[0] != "klab" {
		return fmt.Errorf("not a klab command line: %q", args)
	}
	// Commands share process-wide state (os.Args, the environment,
	// kubectl's fatal-error handler): one at a time.
	r.mu.Lock()
	defer r.mu.Unlock()
	if ownProcess(args[1:]) {
		return r.child(ctx, args[1:], stdout, stderr)
	}
	if code := run(args[1:], stdout, stderr); code != 0 {
		return exitError{code: code}
	}
	return nil
}

// ownProcess says the klab command args (without "klab") must run in a
// process of its own, because it would end this one: etcdctl keeps its
// flags in package state, prints straight to os.Stdout and exits on any
// error; kubectl auth can-i answers "no" with os.Exit(1), which in the
// TUI's process would end the TUI and a local cluster with it.
func ownProcess(args []string) bool {
	switch args[0] {
	case "etcdctl":
		return true
	case "kubectl":
		// Flags may come before the subcommand (kubectl -n x auth can-i).
		for i := 1; i+1 < len(args); i++ {
			if args[i] == "auth" && args[i+1] == "can-i" {
				return true
			}
		}
	}
	return false
}

// child runs klab with args in a process of its own, in the current
// language.
func (r *runner) child(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	exe := r.exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return i18n.Wrap(err, "lessons.cmd.err.executable")
		}
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), "KLAB_LANG="+string(i18n.Current()))
	cmd.Dir = r.dir
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = childWaitDelay
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() > 0 {
		return exitError{code: exit.ExitCode()}
	}
	return err
}
