package lab

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/runtime"
)

// Options tunes Up and Start.
type Options struct {
	// Progress receives step events; nil discards them.
	Progress Progress
	// Logger receives klab's own log; nil discards it.
	Logger *slog.Logger
	// Retain keeps what a failed Up created, for debugging, instead of
	// removing it.
	Retain bool
	// BuildID names the klab build, which tags the Docker node image;
	// empty derives it from the binary.
	BuildID string
	// Binary is the static linux klab binary the Docker image is built
	// from; empty means the running one (or $KLAB_BINARY).
	Binary string
	// LeaderTimeout bounds the wait for a leader; zero means
	// DefaultLeaderTimeout.
	LeaderTimeout time.Duration
	// NodesReadyTimeout bounds the wait for every node to be Ready; zero
	// means DefaultNodesReadyTimeout.
	NodesReadyTimeout time.Duration
}

// Cluster is a cluster run by this process, from Up until Close.
type Cluster struct {
	spec    Spec
	dir     string
	rt      runtime.Runtime
	logger  *slog.Logger
	members []MemberInfo
	topo    []nodeComponents
	info    atomic.Pointer[Info]
	phase   atomic.Value // string
	ctl     *controlServer

	// opMu serialises chaos operations and Close.
	opMu sync.Mutex

	shutdownOnce   sync.Once
	shutdown       chan struct{}
	shutdownReason atomic.Value // string

	closeOnce sync.Once
	closeErr  error

	// detached is set for a cluster that keeps running without this
	// process (Docker): Close leaves it running.
	detached bool
}

// newCluster returns a cluster in PhaseStarting, with no runtime yet.
func newCluster(spec Spec, dir string, logger *slog.Logger) *Cluster {
	c := &Cluster{spec: spec, dir: dir, logger: componentbase.Logger(logger), shutdown: make(chan struct{})}
	c.phase.Store(PhaseStarting)
	c.shutdownReason.Store("")
	return c
}

// Up creates the cluster described by spec and starts it, running upSteps
// and reporting each to opts.Progress, and returns once every node is Ready
// and cluster.json is written. The cluster then runs in this process until
// Close; other processes reach it through the control socket.
//
// A state dir kept from a previous run of the same shape (klab down
// --keep-data, or a `klab up` that was stopped) is started again on its data
// and addresses. If a step fails, what the steps made is undone, unless
// opts.Retain: components are stopped and, for a new cluster, its nodes,
// files and state dir are removed.
func Up(ctx context.Context, spec Spec, opts Options) (*Cluster, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	rtName, err := resolveRuntime(ctx, spec.Runtime)
	if err != nil {
		return nil, err
	}
	dir, err := StateDir(spec.Name)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, i18n.Wrap(err, "lab.err.state-dir", dir)
	}
	ln, err := listenControl(dir, spec.Name)
	if err != nil {
		return nil, err
	}
	c := newCluster(spec, dir, opts.Logger)
	// client-go logs through klog, process-wide: in the local runtime the
	// components' client libraries write to klab's log, never to the
	// terminal the user (or the TUI) is looking at.
	klog.SetSlogLogger(c.logger.With("source", "client-go"))
	c.ctl = serveControl(ln, c)

	// A shutdown request while starting (klab down from another terminal)
	// aborts the start.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.shutdown:
			cancel()
		case <-ctx.Done():
		}
	}()

	prev, err := c.previous(ctx, rtName)
	if err != nil {
		c.ctl.close()
		return nil, err
	}
	b := &bringUp{c: c, opts: opts, runtime: rtName, prev: prev}
	if prev == nil {
		// Last to go: only an empty dir, as anything else in it is not
		// ours to drop.
		b.onFailure("remove the state dir", func(context.Context) error { os.Remove(dir); return nil })
	}
	if err := b.run(ctx, upSteps); err != nil {
		c.ctl.close()
		b.rollback()
		return nil, err
	}
	c.topo = b.topology(upSteps)
	c.phase.Store(PhaseReady)
	if rtName == RuntimeDocker {
		// A Docker cluster lives in its containers, not in this process:
		// it needs no control socket once it is up, and other processes
		// act on it through the engine.
		c.detached = true
		c.ctl.close()
	}
	return c, nil
}

// previous loads the cluster kept in the state dir, if any, and checks that
// it has the shape asked for now. A state dir holding nodes but no
// cluster.json is what a run that died before its cluster was ready leaves
// behind: its data is unusable and is cleared.
func (c *Cluster) previous(ctx context.Context, rtName string) (*Info, error) {
	if rtName == RuntimeDocker {
		return nil, c.checkNoContainers(ctx)
	}
	prev, err := readInfo(c.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.RemoveAll(filepath.Join(c.dir, "nodes")); err != nil {
			return nil, i18n.Wrap(err, "lab.err.state-dir", c.dir)
		}
		return nil, nil
	case err != nil:
		return nil, err
	}
	if prev.Spec.Masters != c.spec.Masters || prev.Spec.Workers != c.spec.Workers || prev.Runtime != rtName || len(prev.Nodes) != prev.Spec.Masters+prev.Spec.Workers {
		return nil, i18n.NewError("lab.err.state-mismatch", c.spec.Name, prev.Spec.Masters, prev.Spec.Workers, prev.Runtime, c.spec.Masters, c.spec.Workers, rtName)
	}
	return prev, nil
}

func (c *Cluster) token() string { return "klab-" + c.spec.Name }
