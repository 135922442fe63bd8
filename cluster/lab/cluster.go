package lab

import (
	"context"
	"errors"
	"os"
	"sync"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/runtime"
)

// Spec returns the spec the cluster was started with.
func (c *Cluster) Spec() Spec { return c.spec }

// Dir returns the cluster's state dir.
func (c *Cluster) Dir() string { return c.dir }

// Info returns what cluster.json says, or nil before the cluster is ready.
func (c *Cluster) Info() *Info { return c.info.Load() }

// Runtime returns the runtime running the cluster's components.
func (c *Cluster) Runtime() runtime.Runtime { return c.rt }

// Detached reports whether the cluster runs without this process (Docker).
func (c *Cluster) Detached() bool { return c.detached }

// Phase returns PhaseStarting, PhaseReady or PhaseStopping.
func (c *Cluster) Phase() string { return c.phase.Load().(string) }

// ShutdownRequested is closed when another process asks, through the
// control API, for the cluster to stop; the process running the cluster
// should then Close it and exit.
func (c *Cluster) ShutdownRequested() <-chan struct{} { return c.shutdown }

// ShutdownReason says who asked for the shutdown ("down" for klab down).
func (c *Cluster) ShutdownReason() string { return c.shutdownReason.Load().(string) }

func (c *Cluster) requestShutdown(reason string) {
	c.shutdownOnce.Do(func() {
		c.shutdownReason.Store(reason)
		close(c.shutdown)
	})
}

func (c *Cluster) controlStatus(ctx context.Context) ControlStatus {
	st := ControlStatus{Name: c.spec.Name, Phase: c.Phase(), PID: os.Getpid(), Runtime: c.rt.Name()}
	if infos, err := c.rt.List(ctx); err == nil {
		st.Components = infos
	}
	return st
}

// Close stops every component gracefully, keeping their data, and closes the
// control socket. Components that have not stopped when ctx ends are killed.
// It is safe to call more than once. A Docker cluster is left running: it
// lives in its containers (klab stop and klab down act on it).
func (c *Cluster) Close(ctx context.Context, p Progress) error {
	c.closeOnce.Do(func() {
		if c.detached {
			return
		}
		c.phase.Store(PhaseStopping)
		c.opMu.Lock()
		defer c.opMu.Unlock()
		infos, _ := c.rt.List(ctx)
		c.closeErr = p.step(i18n.M("down.step.stop-components", len(infos)), func() error {
			return c.stopAll(ctx, infos)
		})
		c.ctl.close()
	})
	return c.closeErr
}

// stopAll stops components concurrently: members stopping one by one would
// each see the others leave and start elections for nothing.
func (c *Cluster) stopAll(ctx context.Context, infos []runtime.ComponentInfo) error {
	errs := make([]error, len(infos))
	var wg sync.WaitGroup
	for i, ci := range infos {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chan error, 1)
			go func() { done <- c.rt.Stop(context.WithoutCancel(ctx), ci.Ref) }()
			select {
			case errs[i] = <-done:
			case <-ctx.Done():
				errs[i] = c.rt.Kill(context.WithoutCancel(ctx), ci.Ref)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
