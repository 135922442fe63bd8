package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

const (
	// stopTimeout is how long docker stop waits for a component to exit
	// on SIGTERM before it sends SIGKILL.
	stopTimeout = 10 * time.Second
	// servePollInterval is how often Start tries a starting component's
	// port. Nothing announces "now listening" across a container's
	// boundary (no Docker event, no health check in a FROM scratch
	// image), so Start polls, bounded by its context.
	servePollInterval = 50 * time.Millisecond
	// probeDialTimeout bounds one connection attempt; probeReadWait is how
	// long a probe waits for a connection to be closed under it (see
	// serving).
	probeDialTimeout = time.Second
	probeReadWait    = 200 * time.Millisecond
	// defaultStartTimeout bounds Start when its context has no deadline:
	// a component that runs but never listens must not hang the caller.
	defaultStartTimeout = 2 * time.Minute
	// exitLogLines is how much of its log an error about a component that
	// exited carries.
	exitLogLines = 20
)

// Start starts a component's container, and its node's pause container if
// that is stopped, and returns once the component accepts connections on
// its port. A component that exits meanwhile fails Start with its exit
// code and the end of its log.
func (r *Runtime) Start(ctx context.Context, ref runtime.Ref) error {
	c, err := r.componentContainer(ctx, ref)
	if err != nil {
		return err
	}
	if c.State == container.StatePaused {
		return nil
	}
	node, err := r.nodeContainer(ctx, ref.Node)
	if err != nil {
		return fmt.Errorf("start %s: %w", ref, err)
	}
	if node.State != container.StateRunning && node.State != container.StatePaused {
		if err := r.cli.ContainerStart(ctx, node.ID, container.StartOptions{}); err != nil {
			return fmt.Errorf("start %s: start node %s: %w", ref, ref.Node, portHint(err))
		}
		if c.State == container.StateRunning {
			// It outlived its node's container, in a network
			// namespace that has no network any more: it must start
			// again to join the new one.
			if err := r.cli.ContainerStop(ctx, c.ID, container.StopOptions{}); err != nil {
				return fmt.Errorf("start %s: stop it to join its restarted node: %w", ref, err)
			}
			c.State = container.StateExited
		}
	}
	if c.State != container.StateRunning {
		if err := r.cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
			return fmt.Errorf("start %s: %w", ref, err)
		}
	}
	return r.waitServing(ctx, ref, c.ID, node.ID)
}

// waitServing waits until the component in container id accepts
// connections on its port, as seen from this machine through its node's
// published port.
func (r *Runtime) waitServing(ctx context.Context, ref runtime.Ref, id, nodeID string) error {
	addr, port, err := r.serveAddr(ctx, id, nodeID)
	if err != nil {
		return fmt.Errorf("start %s: %w", ref, err)
	}
	if port == 0 {
		return nil // nothing to wait for: it serves nothing
	}
	if addr == "" {
		// A partition cut the node off: nothing outside it can reach
		// the component, so there is nothing to wait for.
		r.opts.Logger.Info("started a component on a node cut off by a partition; not waiting for it to serve", "component", ref)
		return nil
	}

	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultStartTimeout)
		defer cancel()
	}
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	exited, waitErr := r.cli.ContainerWait(waitCtx, id, container.WaitConditionNotRunning)
	tick := time.NewTicker(servePollInterval)
	defer tick.Stop()
	for {
		if serving(addr) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("start %s: it does not serve on port %d (%s on this machine): %w", ref, port, addr, ctx.Err())
		case res := <-exited:
			return r.exitError(ctx, ref, id, res.StatusCode)
		case err := <-waitErr:
			if ctx.Err() != nil {
				continue // reported by the ctx.Done case
			}
			return fmt.Errorf("start %s: watch its container: %w", ref, err)
		case <-tick.C:
		}
	}
}

// serving reports whether something accepts connections at addr.
//
// Connecting is not enough: Docker's userland proxy accepts on the
// published port whether or not anything listens in the container, then
// closes the connection at once when it cannot reach it. A server that
// listens waits for the client to speak first (every component speaks
// HTTP, gRPC or TLS), so the probe reads: end of stream means nobody is
// there, silence (or a greeting) means a server holds the connection.
func serving(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, probeDialTimeout)
	if err != nil {
		return false
	}
	defer conn.Close()
	if err := conn.SetReadDeadline(time.Now().Add(probeReadWait)); err != nil {
		return false
	}
	n, err := conn.Read(make([]byte, 1))
	if n > 0 {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}

// serveAddr is where this machine reaches the port the component in
// container id serves (its node's published port), and the port; port 0
// when it serves none, addr "" when a partition cut its node off.
func (r *Runtime) serveAddr(ctx context.Context, id, nodeID string) (addr string, port int, err error) {
	inspect, err := r.cli.ContainerInspect(ctx, id)
	if err != nil {
		return "", 0, err
	}
	if inspect.Config != nil {
		if port, err = servePort(inspect.Config.Labels); err != nil {
			return "", 0, err
		}
	}
	if port == 0 {
		return "", 0, nil
	}
	node, err := r.cli.ContainerInspect(ctx, nodeID)
	if err != nil {
		return "", 0, err
	}
	if node.NetworkSettings == nil || len(node.NetworkSettings.Networks) == 0 {
		return "", port, nil
	}
	addr, ok := publishedAddr(node.HostConfig, port)
	if !ok {
		// Not published: the node's address is reachable from a Linux
		// host, not from Docker Desktop's.
		addr = net.JoinHostPort(node.Config.Labels[labels.IP], strconv.Itoa(port))
	}
	return addr, port, nil
}

// servePort returns the port CreateComponent recorded in a component
// container's labels, the one Start waits for; 0 when it serves none.
func servePort(l map[string]string) (int, error) {
	v, ok := l[labels.ServePort]
	if !ok {
		return 0, nil
	}
	port, err := strconv.Atoi(v)
	if err != nil || port <= 0 || port > 65535 {
		return 0, fmt.Errorf("label %s=%q is no port", labels.ServePort, v)
	}
	return port, nil
}

// exitError describes a component that exited while starting.
func (r *Runtime) exitError(ctx context.Context, ref runtime.Ref, id string, code int64) error {
	tail, err := r.logTail(ctx, id, exitLogLines)
	if err != nil || tail == "" {
		return fmt.Errorf("start %s: its container exited with code %d before serving", ref, code)
	}
	return fmt.Errorf("start %s: its container exited with code %d before serving; its log ends with:\n%s", ref, code, tail)
}

// logTail returns the last lines of a container's log, stdout and stderr
// together.
func (r *Runtime) logTail(ctx context.Context, id string, lines int) (string, error) {
	rc, err := r.cli.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: strconv.Itoa(lines)})
	if err != nil {
		return "", err
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := stdcopy.StdCopy(&buf, &buf, rc); err != nil {
		return "", err
	}
	return strings.TrimRight(buf.String(), "\n"), nil
}

// Stop stops a component gracefully: SIGTERM, then SIGKILL after ten
// seconds, as docker stop does. A paused component is thawed first, so that
// it can handle the signal.
func (r *Runtime) Stop(ctx context.Context, ref runtime.Ref) error {
	c, err := r.componentContainer(ctx, ref)
	if err != nil {
		return err
	}
	switch c.State {
	case container.StateRunning, container.StateRestarting:
	case container.StatePaused:
		if err := r.cli.ContainerUnpause(ctx, c.ID); err != nil {
			return fmt.Errorf("stop %s: thaw it first: %w", ref, err)
		}
	default:
		return nil
	}
	timeout := int(stopTimeout / time.Second)
	if err := r.cli.ContainerStop(ctx, c.ID, container.StopOptions{Timeout: &timeout}); err != nil {
		return fmt.Errorf("stop %s: %w", ref, err)
	}
	return nil
}

// Kill stops a component at once with SIGKILL, and returns once its
// container is down.
func (r *Runtime) Kill(ctx context.Context, ref runtime.Ref) error {
	c, err := r.componentContainer(ctx, ref)
	if err != nil {
		return err
	}
	switch c.State {
	case container.StateRunning, container.StatePaused, container.StateRestarting:
	default:
		return nil
	}
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := r.cli.ContainerKill(ctx, c.ID, "KILL"); err != nil {
		if strings.Contains(err.Error(), "is not running") {
			return nil // it went down by itself meanwhile
		}
		return fmt.Errorf("kill %s: %w", ref, err)
	}
	exited, waitErr := r.cli.ContainerWait(waitCtx, c.ID, container.WaitConditionNotRunning)
	select {
	case <-exited:
		return nil
	case err := <-waitErr:
		return fmt.Errorf("kill %s: wait for its container to stop: %w", ref, err)
	}
}

// Pause freezes a running component, as docker pause does.
func (r *Runtime) Pause(ctx context.Context, ref runtime.Ref) error {
	c, err := r.componentContainer(ctx, ref)
	if err != nil {
		return err
	}
	switch c.State {
	case container.StatePaused:
		return nil
	case container.StateRunning:
		if err := r.cli.ContainerPause(ctx, c.ID); err != nil {
			return fmt.Errorf("pause %s: %w", ref, err)
		}
		return nil
	}
	return fmt.Errorf("pause %s: it is not running (%s)", ref, c.State)
}

// Resume thaws a paused component.
func (r *Runtime) Resume(ctx context.Context, ref runtime.Ref) error {
	c, err := r.componentContainer(ctx, ref)
	if err != nil {
		return err
	}
	switch c.State {
	case container.StateRunning:
		return nil
	case container.StatePaused:
		if err := r.cli.ContainerUnpause(ctx, c.ID); err != nil {
			return fmt.Errorf("resume %s: %w", ref, err)
		}
		return nil
	}
	return fmt.Errorf("resume %s: it is not running (%s)", ref, c.State)
}
