package lab

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/pki"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/docker"
	"github.com/klab-dev/klab/cluster/runtime/local"
)

// rollbackTimeout bounds the undoing of a failed Up. Removing a Docker
// cluster's few dozen containers takes seconds; stopping goroutines, less.
const rollbackTimeout = 2 * time.Minute

// ResolveRuntime turns a spec's runtime into the one that will run the
// cluster. "auto" means Docker when the engine answers, else local; why
// Docker was not chosen comes back as notDocker, for the one line `klab up`
// prints about it. "docker" fails, saying why, when the engine does not
// answer.
func ResolveRuntime(ctx context.Context, name string) (resolved string, notDocker error, err error) {
	switch name {
	case RuntimeLocal:
		return RuntimeLocal, nil, nil
	case RuntimeAuto:
		if err := docker.Ping(ctx); err != nil {
			return RuntimeLocal, err, nil
		}
		return RuntimeDocker, nil, nil
	case RuntimeDocker:
		if err := docker.Ping(ctx); err != nil {
			return "", err, i18n.Wrap(err, "lab.err.docker-unavailable")
		}
		return RuntimeDocker, nil, nil
	}
	return "", nil, i18n.NewError("spec.err.runtime", name)
}

func resolveRuntime(ctx context.Context, name string) (string, error) {
	rt, _, err := ResolveRuntime(ctx, name)
	return rt, err
}

// newRuntime makes the runtime that runs the cluster's components.
func newRuntime(ctx context.Context, name, cluster, dir, image string, logger *slog.Logger) (runtime.Runtime, error) {
	if name == RuntimeDocker {
		rt, err := docker.New(ctx, docker.Options{Cluster: cluster, Image: image, Logger: logger})
		if err != nil {
			return nil, i18n.Wrap(err, "lab.err.docker-unavailable")
		}
		return rt, nil
	}
	return local.New(local.Options{Cluster: cluster, Dir: dir, Logger: logger}), nil
}

// ensureImage builds klab/node:<build-id> from the klab binary unless the
// engine has it already, and returns its name.
func ensureImage(ctx context.Context, opts Options, logger *slog.Logger) (string, error) {
	img, err := docker.EnsureImage(ctx, docker.ImageOptions{Binary: opts.Binary, BuildID: opts.BuildID, Logger: logger})
	if err != nil {
		return "", err
	}
	logger.Info("node image", "image", img.Node, "built", img.Built, "size", img.Size)
	return img.Node, nil
}

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

// infoTopology lists, per node, the components Up runs on it, in Up's order:
// masters, the load balancer, workers.
func infoTopology(info *Info) []nodeComponents {
	var topo []nodeComponents
	for _, n := range info.Nodes {
		if n.Role == runtime.RoleMaster {
			topo = append(topo, nodeComponents{Node: n.Name, Components: []string{
				runtime.ComponentEtcd, runtime.ComponentAPIServer, runtime.ComponentScheduler,
				runtime.ComponentControllerManager, runtime.ComponentKubelet, runtime.ComponentKubeProxy,
			}})
		}
	}
	if info.LB != nil {
		topo = append(topo, nodeComponents{Node: info.LB.Name, Components: []string{runtime.ComponentLB}})
	}
	for _, n := range info.Nodes {
		if n.Role == runtime.RoleWorker {
			topo = append(topo, nodeComponents{Node: n.Name, Components: []string{runtime.ComponentKubelet, runtime.ComponentKubeProxy}})
		}
	}
	return topo
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
	rt, err := newRuntime(ctx, RuntimeDocker, info.Name, dir, "", logger)
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		spec: info.Spec, dir: dir, rt: rt, logger: logger,
		members: info.Members, topo: infoTopology(info),
		shutdown: make(chan struct{}), detached: true,
	}
	c.phase.Store(PhaseReady)
	c.shutdownReason.Store("")
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
// a restart of the engine or of the machine), in the order Up created it.
// etcd members start together: a member started alone campaigns with
// nobody to vote for it, and pre-vote keeps it from raising the term while
// it waits, so once a quorum is up a single election settles the leader.
func Start(ctx context.Context, name string, opts Options) (*Cluster, error) {
	info, err := LoadInfo(name)
	if err != nil {
		return nil, err
	}
	if info.Runtime != RuntimeDocker {
		return nil, i18n.NewError("lab.err.start-local", name)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c, err := attachInfo(ctx, info, logger)
	if err != nil {
		return nil, err
	}
	c.phase.Store(PhaseStarting)
	p := opts.Progress
	// A node whose containers are gone is made again from the image.
	var image string
	if err := p.step(i18n.M("up.step.image"), func() error {
		var err error
		image, err = ensureImage(ctx, opts, logger)
		return err
	}); err != nil {
		return nil, err
	}
	if c.rt, err = newRuntime(ctx, RuntimeDocker, name, c.dir, image, logger); err != nil {
		return nil, err
	}

	all := slices.Clone(info.Nodes)
	if info.LB != nil {
		all = append(all, *info.LB)
	}
	if err := p.step(i18n.M("start.step.nodes", len(all)), func() error {
		for i, n := range all {
			spec := runtime.NodeSpec{Name: n.Name, Role: n.Role, Index: n.Index, Reuse: &all[i]}
			got, err := c.rt.CreateNode(ctx, spec)
			if err != nil {
				return err
			}
			all[i] = got
		}
		return nil
	}); err != nil {
		return nil, err
	}
	nodes := all[:len(info.Nodes)]
	var masters []runtime.Node
	for _, n := range nodes {
		if n.Role == runtime.RoleMaster {
			masters = append(masters, n)
		}
	}
	c.members = membersOf(masters, info.ClusterToken)
	componentRefs := func(component string) []runtime.Ref {
		var refs []runtime.Ref
		for _, nc := range c.topo {
			if slices.Contains(nc.Components, component) {
				refs = append(refs, runtime.Ref{Node: nc.Node, Component: component})
			}
		}
		return refs
	}
	if err := p.step(i18n.M("up.step.etcd", len(c.members)), func() error {
		return c.startAll(ctx, componentRefs(runtime.ComponentEtcd))
	}); err != nil {
		return nil, err
	}
	timeout := opts.LeaderTimeout
	if timeout == 0 {
		timeout = DefaultLeaderTimeout
	}
	if err := p.step(i18n.M("up.step.leader"), func() error {
		return waitLeader(ctx, c.members, timeout)
	}); err != nil {
		return nil, err
	}
	for _, group := range []struct {
		title     i18n.Message
		component []string
	}{
		{i18n.M("up.step.apiservers", len(masters)), []string{runtime.ComponentAPIServer}},
		{i18n.M("up.step.lb"), []string{runtime.ComponentLB}},
		{i18n.M("up.step.control-loop", len(masters)), []string{runtime.ComponentScheduler, runtime.ComponentControllerManager}},
		{i18n.M("up.step.kubelets", len(nodes)), []string{runtime.ComponentKubelet}},
		{i18n.M("up.step.kube-proxies", len(nodes)), []string{runtime.ComponentKubeProxy}},
	} {
		var refs []runtime.Ref
		for _, comp := range group.component {
			refs = append(refs, componentRefs(comp)...)
		}
		if len(refs) == 0 {
			continue
		}
		if err := p.step(group.title, func() error { return c.startAll(ctx, refs) }); err != nil {
			return nil, err
		}
	}

	// The addresses this machine uses are written again, in case a node's
	// published ports changed.
	var lb *runtime.Node
	if info.LB != nil {
		lb = &all[len(all)-1]
	}
	next := c.newInfo(RuntimeDocker, slices.Clone(nodes), lb, info)
	certs, err := pki.Load(filepath.Join(c.dir, pkiDirName))
	if err != nil {
		return nil, err
	}
	if err := p.step(i18n.M("up.step.kubeconfig", next.Kubeconfig), func() error {
		return c.writeKubeconfigs(certs, next.APIServer)
	}); err != nil {
		return nil, err
	}
	nodesReadyTimeout := opts.NodesReadyTimeout
	if nodesReadyTimeout == 0 {
		nodesReadyTimeout = DefaultNodesReadyTimeout
	}
	if err := p.step(i18n.M("up.step.nodes-ready", len(nodes)), func() error {
		return waitNodesReady(ctx, certs, name, next.APIServer, len(nodes), nodesReadyTimeout)
	}); err != nil {
		return nil, err
	}
	if err := p.step(i18n.M("up.step.info", filepath.Join(c.dir, InfoFile)), func() error {
		return writeInfo(c.dir, next)
	}); err != nil {
		return nil, err
	}
	c.info.Store(next)
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
	if docker.Ping(ctx) != nil {
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
