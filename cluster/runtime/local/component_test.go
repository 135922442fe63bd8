package local

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/klab-dev/klab/cluster/runtime"
)

// exitingProcess is a process that ends by itself when told to.
type exitingProcess struct {
	done chan struct{}
	once sync.Once
	err  error
}

func newExitingProcess() *exitingProcess { return &exitingProcess{done: make(chan struct{})} }

func (p *exitingProcess) exit(err error) {
	p.once.Do(func() { p.err = err; close(p.done) })
}
func (p *exitingProcess) Stop() error           { p.exit(nil); return nil }
func (p *exitingProcess) Kill()                 { p.exit(nil) }
func (p *exitingProcess) Pause() error          { return nil }
func (p *exitingProcess) Resume() error         { return nil }
func (p *exitingProcess) Done() <-chan struct{} { return p.done }
func (p *exitingProcess) Err() error            { return p.err }

// startsOf returns a component of spec whose every start hands its fresh
// process to the channel.
func startsOf(t *testing.T, spec runtime.ComponentSpec) (*component, chan *exitingProcess) {
	started := make(chan *exitingProcess, 4)
	c := &component{
		spec:    spec,
		logPath: filepath.Join(t.TempDir(), "c.log"),
		state:   runtime.StateCreated,
		startProcess: func(context.Context, runtime.ComponentSpec, *slog.Logger) (process, error) {
			p := newExitingProcess()
			started <- p
			return p, nil
		},
	}
	t.Cleanup(func() { c.kill() })
	return c, started
}

// TestRestartOnFailure: a kube-scheduler that exits by itself (it lost its
// lease) is started again, as Docker's on-failure policy and a kubelet do;
// one killed on purpose, or an etcd member, stays down.
func TestRestartOnFailure(t *testing.T) {
	sched := runtime.ComponentSpec{Ref: runtime.Ref{Node: "master-1", Component: "kube-scheduler"}, Scheduler: &runtime.SchedulerSpec{}}
	c, started := startsOf(t, sched)
	if err := c.start(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := <-started
	first.exit(errors.New("leaderelection lost"))
	second := <-started // the restart: no other start was asked for
	if info := c.info(); info.State != runtime.StateRunning {
		t.Errorf("after the restart the scheduler is %s, want running", info.State)
	}
	second.exit(errors.New("leaderelection lost"))
	<-started // again, after a longer wait
	c.mu.Lock()
	restarts := c.restarts
	c.mu.Unlock()
	if restarts != 2 {
		t.Errorf("restarts in a row = %d, want 2", restarts)
	}

	if err := c.kill(); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	pending, state := c.restart, c.state
	c.mu.Unlock()
	if pending != nil || state != runtime.StateKilled {
		t.Errorf("after a kill: restart pending %v, state %s; want none, killed", pending != nil, state)
	}

	member := runtime.ComponentSpec{Ref: runtime.Ref{Node: "master-1", Component: "etcd"}}
	m, mstarted := startsOf(t, member)
	if err := m.start(context.Background()); err != nil {
		t.Fatal(err)
	}
	p := <-mstarted
	p.exit(errors.New("disk full"))
	// The exit is recorded by the first of the start's watch and this one
	// to take the lock; the other finds it recorded.
	m.watch(p)
	if info := m.info(); info.State != runtime.StateExited || !strings.Contains(info.Error, "disk full") || strings.Contains(info.Error, "restarting") {
		t.Errorf("etcd member is %s (%q), want exited with its own error and no restart", info.State, info.Error)
	}
	m.mu.Lock()
	if m.restart != nil {
		t.Error("an etcd member that exited by itself is to be restarted")
	}
	m.mu.Unlock()
}
