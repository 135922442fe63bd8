package inprocess

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/klab-dev/klab/cluster/app/shell"
	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// processTable numbers the commands exec runs in a container, for ps and
// kill: the app is PID 1, as a container's entrypoint is.
type processTable struct {
	mu      sync.Mutex
	nextPID int
	procs   map[int]*execProcess
}

type execProcess struct {
	command string
	started time.Time
	cancel  context.CancelFunc
}

func (pt *processTable) add(command string, cancel context.CancelFunc) int {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if pt.procs == nil {
		pt.procs, pt.nextPID = map[int]*execProcess{}, 7
	}
	pid := pt.nextPID
	pt.nextPID++
	pt.procs[pid] = &execProcess{command: command, started: time.Now(), cancel: cancel}
	return pid
}

func (pt *processTable) remove(pid int) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	delete(pt.procs, pid)
}

// processes lists the container's processes: the app, then the execs.
func (c *container) processes() []shell.Process {
	c.mu.Lock()
	proc, _ := c.process()
	started := c.startedAt
	c.mu.Unlock()
	list := []shell.Process{{PID: 1, Command: proc.String(), Started: started}}
	c.execs.mu.Lock()
	defer c.execs.mu.Unlock()
	for pid := 7; pid < c.execs.nextPID; pid++ {
		if p, ok := c.execs.procs[pid]; ok {
			list = append(list, shell.Process{PID: pid, Command: p.command, Started: p.started})
		}
	}
	return list
}

// signal delivers kill's signal: to the app (PID 1) as the runtime's
// StopContainer would, or to an exec'd command, which is interrupted.
func (c *container) signal(pid int, sig string) error {
	if pid == 1 {
		c.mu.Lock()
		terminate, running := c.terminate, c.state == cri.StateRunning
		c.mu.Unlock()
		if !running {
			return errors.New("No such process")
		}
		switch sig {
		case "KILL":
			c.signalKill()
		case "TERM", "INT", "HUP", "QUIT":
			terminate()
		default:
			return fmt.Errorf("unknown signal %s", sig)
		}
		return nil
	}
	c.execs.mu.Lock()
	p, ok := c.execs.procs[pid]
	c.execs.mu.Unlock()
	if !ok {
		return errors.New("No such process")
	}
	p.cancel()
	return nil
}

// ExecInContainer runs cmd with the shell klab's images carry
// (cluster/app/shell) over the pod's filesystem, in the container's
// environment. The command ends when the container does.
func (r *Runtime) ExecInContainer(ctx context.Context, id string, cmd []string, streams cri.Streams) (int, error) {
	c, err := r.lookup(id)
	if err != nil {
		return 0, fmt.Errorf("exec in container %s: %w", id, err)
	}
	r.mu.Lock()
	sb := r.sandboxes[c.sandboxID]
	r.mu.Unlock()
	c.mu.Lock()
	running := c.state == cri.StateRunning
	c.mu.Unlock()
	if !running || sb == nil {
		return 0, fmt.Errorf("container %s is not running", id)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // the container's end ends its execs
		select {
		case <-c.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	go drainResize(ctx, streams.Resize)
	pid := c.execs.add(strings.Join(cmd, " "), cancel)
	defer c.execs.remove(pid)
	hostname := sb.cfg.Hostname
	if hostname == "" {
		hostname = sb.cfg.Name
	}
	code, err := shell.Run(ctx, shell.Config{
		Root: sb.rootDir, Env: containerEnv(r.cfg.NodeName, sb, c.cfg), Hostname: hostname,
		Stdin: streams.Stdin, Stdout: streams.Stdout, Stderr: streams.Stderr, TTY: streams.TTY,
		Processes: c.processes, Kill: c.signal, Dial: r.podDial(sb),
	}, cmd)
	if err != nil {
		// runc's words for a program the image does not have.
		return 0, fmt.Errorf("failed to exec in container: unable to start container process: %w", err)
	}
	return code, nil
}

// drainResize takes terminal sizes the in-process shell has no use for.
func drainResize(ctx context.Context, sizes <-chan cri.TerminalSize) {
	if sizes == nil {
		return
	}
	for {
		select {
		case _, ok := <-sizes:
			if !ok {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// AttachContainer passes on the app's output from now on, until the
// container exits or the client goes. The app reads no input, as a
// container without stdin: true does not.
func (r *Runtime) AttachContainer(ctx context.Context, id string, streams cri.Streams) error {
	c, err := r.lookup(id)
	if err != nil {
		return fmt.Errorf("attach to container %s: %w", id, err)
	}
	c.mu.Lock()
	running := c.state == cri.StateRunning
	c.mu.Unlock()
	if !running {
		return fmt.Errorf("container %s is not running", id)
	}
	go drainResize(ctx, streams.Resize)
	a := &attachment{stdout: streams.Stdout, stderr: streams.Stderr}
	if streams.TTY {
		a.stderr = streams.Stdout
	}
	detach := c.log.attach(a)
	defer detach()
	select {
	case <-c.done:
	case <-ctx.Done():
	}
	return nil
}

// podDial is how the shell of a pod connects: through Config.Dial from the
// pod's address, or directly.
func (r *Runtime) podDial(sb *sandbox) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if r.cfg.Dial == nil {
		return nil
	}
	source, _ := netip.ParseAddr(sb.ip)
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return r.cfg.Dial(ctx, source, network, addr)
	}
}
