package inprocess

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/klab-dev/klab/cluster/app"
	"github.com/klab-dev/klab/cluster/app/shell"
	"github.com/klab-dev/klab/cluster/app/standin"
)

// process is what a container runs as its PID 1: the app with its
// arguments, or klab's shell running the container's command line (a
// command naming one of the shell's tools, the stand-in of a shell image:
// busybox, alpine, ubuntu, or a web image's stand-in given another
// command).
type process struct {
	appArgs   []string
	shellArgv []string
}

// String is the process's command line, as ps shows it.
func (p process) String() string {
	if p.shellArgv != nil {
		return strings.Join(p.shellArgv, " ")
	}
	return strings.Join(append([]string{"app"}, p.appArgs...), " ")
}

// process works out the container's process from its image (or
// stand-in), command and args; an error is a start failure.
func (c *container) process() (process, error) {
	if c.cfg.StandIn == "" {
		// klab's images link sh, sleep and the other tools to klab's
		// shell, so a command line naming one runs in the shell, as it
		// does in the Docker runtime; anything else is the app.
		argv := slices.Concat(c.cfg.Command, c.cfg.Args)
		if len(c.cfg.Command) == 0 {
			argv = slices.Concat(entrypoints[c.image.repo], c.cfg.Args)
		}
		if len(argv) > 0 && shell.IsApplet(argv[0]) {
			argv[0] = path.Base(argv[0])
			return process{shellArgv: argv}, nil
		}
		args, err := appArgs(c.image, c.cfg.Command, c.cfg.Args)
		return process{appArgs: args}, err
	}
	si, ok := standin.Lookup(c.cfg.StandIn)
	if !ok {
		return process{}, fmt.Errorf("unable to start container process: klab has no stand-in for %q", c.cfg.StandIn)
	}
	p := si.Process(c.cfg.Command, c.cfg.Args)
	if p.Web {
		return process{appArgs: []string{"--stand-in=" + si.Name}}, nil
	}
	if len(p.Argv) == 0 {
		return process{}, fmt.Errorf("unable to start container process: no command given and image %s has no entrypoint", c.cfg.Image)
	}
	argv := slices.Clone(p.Argv)
	argv[0] = path.Base(argv[0])
	return process{shellArgv: argv}, nil
}

// shellMain runs argv in klab's shell over the pod's filesystem as the
// container's process. Cancelling its context is SIGTERM and closing the
// kill channel SIGKILL; either interrupts the shell (no trap runs: klab's
// shell has none), and a kill exits 137. A program the shell does not
// have ends the container with 127 and says so on stderr, as a real
// shell image's sh -c would; as PID 1 it is a start failure in a real
// runtime, which the kubelet reports alike (the container exits).
func (r *Runtime) shellMain(c *container, sb *sandbox, opts app.Options, argv []string) func(context.Context) int {
	hostname := sb.cfg.Hostname
	if hostname == "" {
		hostname = sb.cfg.Name
	}
	cfg := shell.Config{
		Root: sb.rootDir, Env: opts.Env, Hostname: hostname,
		Stdout: opts.Stdout, Stderr: opts.Stderr,
		// The pod's own network, as an exec into it has: Service IPs
		// and the cluster DNS through the node's kube-proxy.
		Processes: c.processes, Kill: c.signal, Dial: r.podDial(sb),
	}
	kill := opts.Kill
	return func(ctx context.Context) int {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		killed := make(chan struct{})
		go func() {
			select {
			case <-kill:
				close(killed)
				cancel()
			case <-ctx.Done():
			}
		}()
		code, err := shell.Run(ctx, cfg, argv)
		select {
		case <-killed:
			return app.ExitKilled
		default:
		}
		if err != nil {
			fmt.Fprintf(opts.Stderr, "%s: %v\n", argv[0], err)
			if errors.Is(err, shell.ErrNotFound) {
				return shell.ExitNotFound
			}
			return 1
		}
		return code
	}
}
