package lab

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/docker"
)

// checkNoContainers refuses to create a Docker cluster over one that exists:
// its containers hold data (etcd's volumes) that a new cluster must not
// silently take over.
func (c *Cluster) checkNoContainers(ctx context.Context) error {
	names, err := docker.ListClusters(ctx)
	if err != nil {
		return i18n.Wrap(err, "lab.err.docker-unavailable")
	}
	if slices.Contains(names, c.spec.Name) {
		return i18n.NewError("lab.err.exists", c.spec.Name)
	}
	// A cluster.json without containers describes a cluster whose
	// containers were removed behind klab's back: it is stale.
	if err := os.Remove(filepath.Join(c.dir, InfoFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return i18n.Wrap(err, "lab.err.state-dir", c.dir)
	}
	return nil
}

// Attach returns a Docker cluster created earlier (by this or another
// process), to act on it through the engine: chaos, status, stop.
func Attach(ctx context.Context, name string) (*Cluster, error) {
	info, err := LoadInfo(name)
	if err != nil {
		return nil, err
	}
	if info.Runtime != RuntimeDocker {
		return nil, i18n.NewError("lab.err.not-docker", name, info.Runtime)
	}
	return attachInfo(ctx, info, slog.New(slog.DiscardHandler))
}

func attachInfo(ctx context.Context, info *Info, logger *slog.Logger) (*Cluster, error) {
	dir, err := StateDir(info.Name)
	if err != nil {
		return nil, err
	}
	c := newCluster(info.Spec, dir, logger)
	if c.rt, err = newRuntime(ctx, RuntimeDocker, info.Name, dir, "", c.logger); err != nil {
		return nil, err
	}
	c.members, c.detached = info.Members, true
	c.topo = attached(c, info).topology(upSteps)
	c.phase.Store(PhaseReady)
	c.info.Store(info)
	return c, nil
}

// Chaos runs one chaos operation on the named cluster: through the engine
// for a Docker cluster, through the control socket of its `klab up`
// process for a local one.
func Chaos(ctx context.Context, name string, req ChaosRequest) (*ChaosResult, error) {
	if info, err := LoadInfo(name); err == nil && info.Runtime == RuntimeDocker {
		c, err := attachInfo(ctx, info, slog.New(slog.DiscardHandler))
		if err != nil {
			return nil, err
		}
		return c.Chaos(ctx, req)
	}
	cl, err := Connect(ctx, name)
	if err != nil {
		return nil, err
	}
	return cl.Chaos(ctx, req)
}

// Start starts a Docker cluster whose containers were stopped (klab stop,
// a restart of the engine or of the machine), running upSteps as Up does:
// the nodes' containers are started (made again from the image if they are
// gone) and the components, which exist already, are started in Up's
// order. etcd members start together: a member started alone campaigns
// with nobody to vote for it, and pre-vote keeps it from raising the term
// while it waits, so once a quorum is up a single election settles the
// leader. A Start that fails leaves what it started running: the cluster
// was there before it, and klab stop or klab down act on it as it is.
func Start(ctx context.Context, name string, opts Options) (*Cluster, error) {
	info, err := LoadInfo(name)
	if err != nil {
		return nil, err
	}
	if info.Runtime != RuntimeDocker {
		return nil, i18n.NewError("lab.err.start-local", name)
	}
	dir, err := StateDir(name)
	if err != nil {
		return nil, err
	}
	c := newCluster(info.Spec, dir, opts.Logger)
	c.detached = true
	b := &bringUp{c: c, opts: opts, runtime: RuntimeDocker, prev: info, existing: true}
	if err := b.run(ctx, upSteps); err != nil {
		b.rollback()
		return nil, err
	}
	c.topo = b.topology(upSteps)
	c.phase.Store(PhaseReady)
	return c, nil
}

// Stop stops every container of a Docker cluster, keeping them and their
// data for klab start: first what talks to the API servers, then the API
// servers, then the etcd members together (one by one, each departure
// would make the rest hold an election for nothing).
func Stop(ctx context.Context, name string, p Progress) error {
	c, err := Attach(ctx, name)
	if err != nil {
		return err
	}
	infos, err := c.rt.List(ctx)
	if err != nil {
		return err
	}
	var first, apis, members []runtime.ComponentInfo
	for _, ci := range infos {
		switch ci.Ref.Component {
		case runtime.ComponentEtcd:
			members = append(members, ci)
		case runtime.ComponentAPIServer, runtime.ComponentLB:
			apis = append(apis, ci)
		default:
			first = append(first, ci)
		}
	}
	return p.step(i18n.M("down.step.stop-components", len(infos)), func() error {
		for _, group := range [][]runtime.ComponentInfo{first, apis, members} {
			if err := c.stopAll(ctx, group); err != nil {
				return err
			}
		}
		return nil
	})
}

// removeDocker removes every Docker object labelled with the cluster's
// name, cluster.json or not: a `klab up` killed half-way leaves containers
// and no cluster.json. It reports whether there was anything to remove.
func removeDocker(ctx context.Context, name string, p Progress) (bool, error) {
	if err := docker.Ping(ctx); err != nil {
		// Without the engine klab cannot see the cluster's containers.
		// A cluster whose state dir says it runs on Docker is refused
		// rather than forgotten: removing the state dir would leave its
		// containers running, found by nothing but their labels.
		if info, ierr := LoadInfo(name); ierr == nil && info.Runtime == RuntimeDocker {
			return false, i18n.Wrap(err, "lab.err.down-no-engine", name)
		}
		return false, nil
	}
	names, err := docker.ListClusters(ctx)
	if err != nil {
		return false, i18n.Wrap(err, "lab.err.docker-unavailable")
	}
	if !slices.Contains(names, name) {
		return false, nil
	}
	return true, p.step(i18n.M("down.step.containers", name), func() error {
		return docker.RemoveCluster(ctx, name, slog.New(slog.DiscardHandler))
	})
}

// Clusters lists every cluster klab knows of: state dirs under Home and
// clusters with objects in the Docker engine.
func Clusters(ctx context.Context) ([]string, error) {
	home, err := Home()
	if err != nil {
		return nil, err
	}
	var names []string
	entries, err := os.ReadDir(home)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, i18n.Wrap(err, "lab.err.state-dir", home)
	}
	for _, e := range entries {
		if e.IsDir() && ValidateName(e.Name()) == nil {
			names = append(names, e.Name())
		}
	}
	if docker.Ping(ctx) == nil {
		more, err := docker.ListClusters(ctx)
		if err != nil {
			return nil, i18n.Wrap(err, "lab.err.docker-unavailable")
		}
		for _, n := range more {
			if !slices.Contains(names, n) && ValidateName(n) == nil {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return names, nil
}
