package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/klab-dev/klab/cluster/runtime"
)

// errNotRunning is wrapped when pausing or resuming a component that is not
// running: unlike docker, which would refuse too, there is nothing to freeze.
var errNotRunning = errors.New("component is not running")

// component is one in-process component and its lifecycle. Each start makes a
// fresh process (an etcd member, an API server, ...) from the same
// configuration, as restarting a container runs a fresh process on the same
// data.
type component struct {
	spec    runtime.ComponentSpec
	logPath string
	// startProcess starts a fresh process for the spec.
	startProcess func(context.Context, runtime.ComponentSpec, *slog.Logger) (process, error)

	// mu serialises lifecycle operations and guards the fields below.
	mu        sync.Mutex
	state     runtime.State
	err       error
	startedAt time.Time
	member    process
	logFile   *os.File
	// stopping is a process being stopped gracefully, which kill can still
	// cut short.
	stopping process
	// restart is the pending restart of a component that exited by
	// itself (spec.RestartsOnFailure); restarts counts those in a row.
	restart  *time.Timer
	restarts int
}

// The restart of a component that exits by itself follows Docker's
// on-failure policy, which the Docker runtime uses: 100 ms, doubling up to
// a minute, and back to 100 ms once a run lasted ten seconds.
const (
	restartFirst = 100 * time.Millisecond
	restartMax   = time.Minute
	restartReset = 10 * time.Second
)

func (c *component) info() runtime.ComponentInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	info := runtime.ComponentInfo{Ref: c.spec.Ref, State: c.state, StartedAt: c.startedAt}
	if c.err != nil {
		info.Error = c.err.Error()
	}
	return info
}

func (c *component) start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancelRestart()
	if c.state == runtime.StateRunning || c.state == runtime.StatePaused {
		return nil
	}
	if c.stopping != nil {
		return fmt.Errorf("start %s: still stopping", c.spec.Ref)
	}
	logFile, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("start %s: open log: %w", c.spec.Ref, err)
	}
	logger := slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m, err := c.startProcess(ctx, c.spec, logger)
	if err != nil {
		logFile.Close()
		c.state, c.err = runtime.StateExited, err
		return fmt.Errorf("start %s: %w", c.spec.Ref, err)
	}
	c.member, c.logFile = m, logFile
	c.state, c.err, c.startedAt = runtime.StateRunning, nil, time.Now()
	go c.watch(m)
	return nil
}

// watch notices a member that stops by itself (a fatal storage error, a
// panic recovered by the member) and records why.
func (c *component) watch(m process) {
	done := m.Done()
	if done == nil {
		return
	}
	<-done
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.member != m {
		return // stopped or killed on purpose; already recorded
	}
	c.state, c.err = runtime.StateExited, m.Err()
	if c.err == nil {
		c.err = errors.New("member exited")
	}
	c.release()
	if c.spec.RestartsOnFailure() {
		c.scheduleRestart()
	}
}

// scheduleRestart starts the component again after the policy's delay;
// c.mu is held.
func (c *component) scheduleRestart() {
	if time.Since(c.startedAt) >= restartReset {
		c.restarts = 0
	}
	delay := min(restartFirst<<min(c.restarts, 20), restartMax)
	c.restarts++
	c.err = fmt.Errorf("%w (restarting in %s)", c.err, delay)
	var t *time.Timer
	t = time.AfterFunc(delay, func() {
		c.mu.Lock()
		if c.restart != t {
			c.mu.Unlock()
			return // stopped, killed or started meanwhile
		}
		c.restart = nil
		c.mu.Unlock()
		// A start that fails records why, as an exit.
		c.start(context.Background())
	})
	c.restart = t
}

// cancelRestart drops a pending restart; c.mu is held.
func (c *component) cancelRestart() {
	if c.restart != nil {
		c.restart.Stop()
		c.restart = nil
	}
}

// release forgets the running member; c.mu is held.
func (c *component) release() {
	c.member = nil
	if c.logFile != nil {
		c.logFile.Close()
		c.logFile = nil
	}
}

func (c *component) stop() error {
	c.mu.Lock()
	c.cancelRestart()
	c.restarts = 0
	m, logFile := c.member, c.logFile
	if m == nil {
		if c.state == runtime.StateCreated {
			c.state = runtime.StateStopped
		}
		c.mu.Unlock()
		return nil
	}
	if c.state == runtime.StatePaused {
		// A graceful stop finishes the current raft round, which a frozen
		// member cannot do; docker likewise thaws a paused container
		// before signalling it.
		m.Resume()
	}
	// The member stops outside the lock so that a kill can cut a graceful
	// stop short, as kill -9 does to a process slow to exit.
	c.member, c.logFile, c.stopping = nil, nil, m
	c.state, c.err = runtime.StateStopped, nil
	c.mu.Unlock()

	err := m.Stop()

	c.mu.Lock()
	if c.stopping == m {
		c.stopping = nil
	}
	c.mu.Unlock()
	logFile.Close()
	if err != nil {
		return fmt.Errorf("stop %s: %w", c.spec.Ref, err)
	}
	return nil
}

func (c *component) kill() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancelRestart()
	c.restarts = 0
	if m := c.stopping; m != nil {
		m.Kill()
		c.stopping = nil
		c.state = runtime.StateKilled
	}
	m := c.member
	if m == nil {
		return nil
	}
	m.Kill()
	c.release()
	c.state, c.err = runtime.StateKilled, nil
	return nil
}

func (c *component) pause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.state {
	case runtime.StatePaused:
		return nil
	case runtime.StateRunning:
		if err := c.member.Pause(); err != nil {
			return fmt.Errorf("pause %s: %w", c.spec.Ref, err)
		}
		c.state = runtime.StatePaused
		return nil
	}
	return fmt.Errorf("pause %s: %w (%s)", c.spec.Ref, errNotRunning, c.state)
}

func (c *component) resume() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.state {
	case runtime.StateRunning:
		return nil
	case runtime.StatePaused:
		if err := c.member.Resume(); err != nil {
			return fmt.Errorf("resume %s: %w", c.spec.Ref, err)
		}
		c.state = runtime.StateRunning
		return nil
	}
	return fmt.Errorf("resume %s: %w (%s)", c.spec.Ref, errNotRunning, c.state)
}
