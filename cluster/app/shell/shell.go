package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// Exit codes, as POSIX shells use them.
const (
	ExitNotFound = 127
	ExitUsage    = 2
)

// ErrNotFound is returned by Run for a command line whose program does
// not exist, as a container runtime's exec fails before it starts
// anything.
var ErrNotFound = errors.New("executable file not found in $PATH")

// Process is one process a container holds, for ps.
type Process struct {
	PID     int
	Command string
	Started time.Time
}

// Config is the shell's world.
type Config struct {
	// Root is the directory that is "/" to the shell; empty means the
	// machine's own root (inside a container).
	Root string
	// Env is the environment, KEY=VALUE; Dir the working directory
	// ("/" when empty).
	Env []string
	Dir string
	// Hostname is what hostname prints.
	Hostname string
	// Stdin, Stdout and Stderr connect the shell with its client; a nil
	// Stdin reads nothing.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// TTY makes a shell without a script interactive (prompt, echo, line
	// editing, Ctrl-C and Ctrl-D), over a raw client terminal.
	TTY bool
	// Terminal says Stdin and Stdout are a real terminal (a pty in a
	// container), which edits lines and echoes itself: an interactive
	// shell then only prompts.
	Terminal bool
	// interrupts delivers the terminal's Ctrl-C (SIGINT) with Terminal.
	interrupts <-chan os.Signal
	// Processes lists the container's processes for ps; Kill signals
	// one (kill). Either may be nil: ps then shows the shell alone.
	Processes func() []Process
	Kill      func(pid int, signal string) error
	// Dial connects the network tools (wget, curl, nslookup); nil uses a
	// net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// shellNames are the names the shell answers to as argv[0].
var shellNames = []string{"sh", "ash", "bash"}

// Run runs argv as a container runtime's exec runs it: a shell (`sh`,
// `sh -c script [name [args...]]`, `sh script`) or a single tool with its
// arguments. It returns the exit code; an error means nothing could be
// run (ErrNotFound for an unknown program).
func Run(ctx context.Context, cfg Config, argv []string) (int, error) {
	if len(argv) == 0 {
		return 0, errors.New("no command given")
	}
	if cfg.Dir == "" {
		cfg.Dir = "/"
	}
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.Stderr == nil {
		cfg.Stderr = cfg.Stdout
		if !cfg.TTY {
			cfg.Stderr = io.Discard
		}
	}
	name := path.Base(argv[0])
	if !slices.Contains(shellNames, name) {
		if _, ok := tools[name]; !ok && !isShellBuiltin(name) {
			return 0, fmt.Errorf("exec: %q: %w", argv[0], ErrNotFound)
		}
		// One tool: run it as a shell would run that command line.
		quoted := make([]string, len(argv))
		for i, a := range argv {
			q, err := syntax.Quote(a, syntax.LangPOSIX)
			if err != nil {
				return 0, fmt.Errorf("exec %q: %w", argv, err)
			}
			quoted[i] = q
		}
		quoted[0] = name
		return newSession(cfg).script(ctx, strings.Join(quoted, " "), nil)
	}
	s := newSession(cfg)
	args := argv[1:]
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-c" {
		switch args[0] {
		case "-i", "-l", "-s", "--login", "-e", "-x", "-u":
			args = args[1:]
			continue
		}
		fmt.Fprintf(cfg.Stderr, "%s: %s: invalid option\n", name, args[0])
		return ExitUsage, nil
	}
	switch {
	case len(args) >= 1 && args[0] == "-c":
		if len(args) < 2 {
			fmt.Fprintf(cfg.Stderr, "%s: -c: option requires an argument\n", name)
			return ExitUsage, nil
		}
		return s.script(ctx, args[1], args[2:])
	case len(args) >= 1:
		data, err := os.ReadFile(s.view.host(abs(cfg.Dir, args[0])))
		if err != nil {
			fmt.Fprintf(cfg.Stderr, "%s: can't open '%s': %s\n", name, args[0], errText(err))
			return ExitNotFound, nil
		}
		return s.script(ctx, string(data), args[1:])
	case cfg.TTY || cfg.Terminal:
		return s.interactive(ctx)
	default:
		return s.stream(ctx)
	}
}

// session is one run of the shell.
type session struct {
	cfg  Config
	view view
}

func newSession(cfg Config) *session { return &session{cfg: cfg, view: view{root: cfg.Root}} }

// runner builds an interpreter over the session's world.
func (s *session) runner(stdin io.Reader, stdout, stderr io.Writer, params []string) (*runner, error) {
	opts := []interp.RunnerOption{
		interp.StdIO(stdin, stdout, stderr),
		interp.Env(expand.ListEnviron(s.env()...)),
		interp.ExecHandlers(s.execMiddleware),
		interp.OpenHandler(s.view.opener()),
		interp.StatHandler(s.view.stat),
		interp.ReadDirHandler2(s.view.readDir),
		interp.AccessHandler(s.view.access),
	}
	if params != nil {
		opts = append(opts, interp.Params(append([]string{"--"}, params...)...))
	}
	r, err := interp.New(opts...)
	if err != nil {
		return nil, err
	}
	r.Dir = s.cfg.Dir
	return &runner{Runner: r}, nil
}

// env is the environment with what a shell sets itself.
func (s *session) env() []string {
	env := slices.Clone(s.cfg.Env)
	has := func(key string) bool {
		return slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, key+"=") })
	}
	defaults := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/root", "PWD=" + s.cfg.Dir, "SHELL=/bin/sh", "USER=root",
	}
	if s.cfg.Hostname != "" {
		defaults = append(defaults, "HOSTNAME="+s.cfg.Hostname)
	}
	if s.cfg.TTY {
		defaults = append(defaults, "TERM=xterm")
	}
	for _, kv := range defaults {
		if key, _, _ := strings.Cut(kv, "="); !has(key) {
			env = append(env, kv)
		}
	}
	return env
}

// runner is an interpreter.
type runner struct {
	*interp.Runner
}

// script runs a whole script with positional parameters params.
func (s *session) script(ctx context.Context, src string, params []string) (int, error) {
	f, err := syntax.NewParser().Parse(strings.NewReader(src), "")
	if err != nil {
		fmt.Fprintf(s.cfg.Stderr, "sh: syntax error: %v\n", err)
		return ExitUsage, nil
	}
	r, err := s.runner(s.cfg.Stdin, s.cfg.Stdout, s.cfg.Stderr, params)
	if err != nil {
		return 1, err
	}
	return exitCode(r.Run(ctx, f)), nil
}

// stream reads commands from stdin without a terminal (`kubectl exec -i
// pod -- sh` fed a script), running each as soon as it is complete.
func (s *session) stream(ctx context.Context) (int, error) {
	in := s.cfg.Stdin
	if in == nil {
		return 0, nil
	}
	r, err := s.runner(nil, s.cfg.Stdout, s.cfg.Stderr, nil)
	if err != nil {
		return 1, err
	}
	code := 0
	for stmts, err := range syntax.NewParser().InteractiveSeq(in) {
		if err != nil {
			fmt.Fprintf(s.cfg.Stderr, "sh: syntax error: %v\n", err)
			return ExitUsage, nil
		}
		for _, st := range stmts {
			code = exitCode(r.Run(ctx, st))
			if r.Exited() || ctx.Err() != nil {
				return code, nil
			}
		}
	}
	return code, nil
}

// exitCode is the status a Run ended with.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if code, ok := interp.IsExitStatus(err); ok {
		return int(code)
	}
	if errors.Is(err, context.Canceled) {
		return 130
	}
	return 1
}

// shellBuiltins are the interpreter's own commands, which Run accepts as
// a program too (kubectl cp runs `test -d`).
var shellBuiltins = []string{
	"true", "false", "exit", "set", "shift", "unset", "echo", "printf", "break", "continue", "pwd", "cd",
	"wait", "builtin", "trap", "type", "source", ".", "command", "dirs", "pushd", "popd", "umask", "alias",
	"unalias", "fg", "bg", "getopts", "eval", "test", "[", "exec", "return", "read", "mapfile", "readarray",
	"shopt", "export", "readonly", "declare", "local",
}

func isShellBuiltin(name string) bool { return slices.Contains(shellBuiltins, name) }
