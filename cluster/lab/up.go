package lab

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/pki"
	"github.com/klab-dev/klab/cluster/runtime"
)

// Upstream etcd ports: every member listens on them when its node has them
// free (always in Docker; in the local runtime when no other cluster holds
// them on that loopback address).
const (
	etcdClientPort = 2379
	etcdPeerPort   = 2380
)

// DefaultLeaderTimeout bounds the wait for the first leader. An election
// takes about a second with etcd's timings; the margin is for slow disks and
// busy laptops.
const DefaultLeaderTimeout = 60 * time.Second

// Options tunes Up.
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

// Up creates the cluster described by spec and starts it, reporting each
// step to opts.Progress, and returns once an etcd leader is elected and
// cluster.json is written. The cluster then runs in this process until
// Close; other processes reach it through the control socket.
//
// A state dir kept from a previous run of the same shape (klab down
// --keep-data, or a `klab up` that was stopped) is started again on its data
// and addresses. If a step fails, everything Up made is undone: members are
// stopped and, for a new cluster, its state dir is removed.
func Up(ctx context.Context, spec Spec, opts Options) (_ *Cluster, err error) {
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
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// client-go logs through klog, process-wide: in the local runtime the
	// components' client libraries write to klab's log, never to the
	// terminal the user (or the TUI) is looking at.
	klog.SetSlogLogger(logger.With("source", "client-go"))
	c := &Cluster{spec: spec, dir: dir, logger: logger, shutdown: make(chan struct{})}
	c.phase.Store(PhaseStarting)
	c.shutdownReason.Store("")
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
	p := opts.Progress
	var image string
	if rtName == RuntimeDocker {
		// The image comes first: every container, a node's pause
		// container included, runs it.
		if err := p.step(i18n.M("up.step.image"), func() error {
			var err error
			image, err = ensureImage(ctx, opts, logger)
			return err
		}); err != nil {
			c.ctl.close()
			return nil, err
		}
	}
	if c.rt, err = newRuntime(ctx, rtName, spec.Name, dir, image, logger); err != nil {
		c.ctl.close()
		return nil, err
	}
	defer func() {
		if err != nil {
			c.rollback(prev == nil, opts.Retain)
		}
	}()

	nodes := make([]runtime.Node, spec.Masters)
	workers := make([]runtime.Node, spec.Workers)
	if err := p.step(i18n.M("up.step.nodes", spec.Masters+spec.Workers, rtName), func() error {
		if err := c.createNodes(ctx, nodes, prev); err != nil {
			return err
		}
		return c.createWorkers(ctx, workers, prev)
	}); err != nil {
		return nil, err
	}
	c.members = membersOf(nodes, c.token())
	for _, m := range c.members {
		c.topo = append(c.topo, nodeComponents{Node: m.Name, Components: []string{runtime.ComponentEtcd}})
	}
	if err := p.step(i18n.M("up.step.etcd", len(c.members)), func() error {
		return c.startMembers(ctx, nodes)
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
	var lbNode *runtime.Node
	if spec.Masters > 1 {
		if err := p.step(i18n.M("up.step.lb-node"), func() error {
			n, err := c.createLBNode(ctx, prev)
			lbNode = &n
			return err
		}); err != nil {
			return nil, err
		}
	}
	var certs *pki.PKI
	if err := p.step(i18n.M("up.step.pki", filepath.Join(dir, pkiDirName)), func() error {
		var err error
		certs, err = c.ensurePKI(append(append([]runtime.Node(nil), nodes...), workers...), lbNode)
		return err
	}); err != nil {
		return nil, err
	}
	if err := p.step(i18n.M("up.step.apiservers", len(nodes)), func() error {
		return c.startAPIServers(ctx, nodes)
	}); err != nil {
		return nil, err
	}
	for i := range c.topo {
		c.topo[i].Components = append(c.topo[i].Components, runtime.ComponentAPIServer)
	}
	// server is where components reach the API server; hostServer is
	// where this machine does (kubectl, klab). They differ in Docker, where
	// ports are published on 127.0.0.1.
	server := "https://" + net.JoinHostPort(nodes[0].Host, strconv.Itoa(nodes[0].Ports["apiserver"]))
	hostServer := "https://" + nodes[0].HostAddr("apiserver")
	if lbNode != nil {
		if err := p.step(i18n.M("up.step.lb"), func() error {
			return c.startLB(ctx, *lbNode, nodes)
		}); err != nil {
			return nil, err
		}
		c.topo = append(c.topo, nodeComponents{Node: lbNode.Name, Components: []string{runtime.ComponentLB}})
		server = "https://" + net.JoinHostPort(lbNode.Host, strconv.Itoa(lbNode.Ports["apiserver"]))
		hostServer = "https://" + lbNode.HostAddr("apiserver")
	}
	if err := p.step(i18n.M("up.step.kubeconfig", filepath.Join(dir, KubeconfigFile)), func() error {
		return c.writeKubeconfigs(certs, hostServer)
	}); err != nil {
		return nil, err
	}
	if err := p.step(i18n.M("up.step.control-loop", len(nodes)), func() error {
		return c.startControlLoop(ctx, nodes)
	}); err != nil {
		return nil, err
	}
	for i := range nodes {
		c.topo[i].Components = append(c.topo[i].Components, runtime.ComponentScheduler, runtime.ComponentControllerManager)
	}
	if err := p.step(i18n.M("up.step.kubelets", len(nodes)+len(workers)), func() error {
		return c.startKubelets(ctx, nodes, workers, server)
	}); err != nil {
		return nil, err
	}
	for i := range nodes {
		c.topo[i].Components = append(c.topo[i].Components, runtime.ComponentKubelet)
	}
	for _, w := range workers {
		c.topo = append(c.topo, nodeComponents{Node: w.Name, Components: []string{runtime.ComponentKubelet}})
	}
	all := append(append([]runtime.Node(nil), nodes...), workers...)
	if err := p.step(i18n.M("up.step.kube-proxies", len(all)), func() error {
		return c.startKubeProxies(ctx, certs, hostServer, server, all)
	}); err != nil {
		return nil, err
	}
	for i := range c.topo {
		if c.topo[i].Node != runtime.RoleLB {
			c.topo[i].Components = append(c.topo[i].Components, runtime.ComponentKubeProxy)
		}
	}
	nodesReadyTimeout := opts.NodesReadyTimeout
	if nodesReadyTimeout == 0 {
		nodesReadyTimeout = DefaultNodesReadyTimeout
	}
	if err := p.step(i18n.M("up.step.nodes-ready", len(nodes)+len(workers)), func() error {
		return waitNodesReady(ctx, certs, spec.Name, hostServer, len(nodes)+len(workers), nodesReadyTimeout)
	}); err != nil {
		return nil, err
	}
	info := c.newInfo(rtName, append(append([]runtime.Node(nil), nodes...), workers...), lbNode, prev)
	if err := p.step(i18n.M("up.step.info", filepath.Join(dir, InfoFile)), func() error {
		return writeInfo(dir, info)
	}); err != nil {
		return nil, err
	}
	c.info.Store(info)
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

// createLBNode creates the load balancer's node, which a cluster with
// several masters has (as kind runs haproxy in a container of its own).
func (c *Cluster) createLBNode(ctx context.Context, prev *Info) (runtime.Node, error) {
	spec := runtime.NodeSpec{
		Name: runtime.RoleLB, Role: runtime.RoleLB, Index: 1,
		Ports: []runtime.Port{{Name: "apiserver", Default: apiServerPort}},
	}
	if prev != nil && prev.LB != nil {
		spec.Reuse = prev.LB
	}
	return c.rt.CreateNode(ctx, spec)
}

func (c *Cluster) createNodes(ctx context.Context, nodes []runtime.Node, prev *Info) error {
	for i := range nodes {
		spec := runtime.NodeSpec{
			Name:  runtime.RoleMaster + "-" + strconv.Itoa(i+1),
			Role:  runtime.RoleMaster,
			Index: i + 1,
			Ports: masterPorts(),
		}
		if prev != nil {
			spec.Reuse = &prev.Nodes[i]
		}
		n, err := c.rt.CreateNode(ctx, spec)
		if err != nil {
			return err
		}
		nodes[i] = n
	}
	return nil
}

// membersOf derives each master's etcd member from its node: named after
// the node, listening on the node's etcd ports. The peer URL is the one the
// members know each other by (the member ID derives from it); the client
// and debug URLs are where this machine reaches the member, which in Docker
// is a port published on 127.0.0.1.
func membersOf(nodes []runtime.Node, token string) []MemberInfo {
	members := make([]MemberInfo, len(nodes))
	for i, n := range nodes {
		peer := n.URL("etcd-peer")
		members[i] = MemberInfo{
			Name:      n.Name,
			ID:        fmt.Sprintf("%x", etcd.MemberID(peer, token)),
			PeerURL:   peer,
			ClientURL: n.HostURL("etcd-client"),
			DebugURL:  n.HostURL("etcd-peer") + "/debug/klab",
		}
	}
	return members
}

func (c *Cluster) startMembers(ctx context.Context, nodes []runtime.Node) error {
	peers := make([]etcd.Peer, len(c.members))
	for i, m := range c.members {
		peers[i] = etcd.Peer{Name: m.Name, PeerURL: m.PeerURL, ClientURL: nodes[i].URL("etcd-client")}
	}
	for i, m := range c.members {
		cfg := runtime.EtcdSpec{
			Name:                m.Name,
			InitialClusterToken: c.token(),
			InitialCluster:      peers,
			ListenClient:        fmt.Sprintf("%s:%d", nodes[i].Host, nodes[i].Ports["etcd-client"]),
			ListenPeer:          fmt.Sprintf("%s:%d", nodes[i].Host, nodes[i].Ports["etcd-peer"]),
			UnsafeNoFsync:       c.spec.NoFsync,
		}
		if err := c.rt.CreateComponent(ctx, runtime.ComponentSpec{Ref: m.Ref(), Etcd: &cfg}); err != nil {
			return err
		}
	}
	// Members start together, as a new etcd cluster's members do: none can
	// elect a leader alone.
	errs := make([]error, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.rt.Start(ctx, m.Ref())
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// waitLeader waits until one member reports itself leader and a quorum of
// members follow it. Members publish no "leader elected" event across
// processes, so this polls their status every 50 ms until the deadline.
func waitLeader(ctx context.Context, members []MemberInfo, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		answers := fetchAll(ctx, members)
		if i, ok := leaderOf(answers); ok {
			id, followers := answers[i].status.ID, 0
			for _, a := range answers {
				if a.err == nil && a.status.Leader == id && a.status.Term == answers[i].status.Term {
					followers++
				}
			}
			if followers >= len(members)/2+1 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return i18n.Wrap(ctx.Err(), "lab.err.leader-timeout", timeout)
		case <-tick.C:
		}
	}
}

// newInfo describes the ready cluster: its nodes (masters first), its load
// balancer if any, and where this machine reaches them.
func (c *Cluster) newInfo(rtName string, nodes []runtime.Node, lb *runtime.Node, prev *Info) *Info {
	info := &Info{
		Version:      infoVersion,
		Spec:         c.spec,
		Name:         c.spec.Name,
		Runtime:      rtName,
		CreatedAt:    time.Now().UTC(),
		Members:      c.members,
		Nodes:        nodes,
		ClusterToken: c.token(),
		LB:           lb,
		Kubeconfig:   filepath.Join(c.dir, KubeconfigFile),
	}
	if prev != nil {
		info.CreatedAt = prev.CreatedAt
	}
	for _, m := range c.members {
		info.EtcdEndpoints = append(info.EtcdEndpoints, m.ClientURL)
	}
	for _, n := range nodes {
		if n.Role == runtime.RoleMaster {
			info.APIServers = append(info.APIServers, "https://"+n.HostAddr("apiserver"))
		}
	}
	info.APIServer = info.APIServers[0]
	if lb != nil {
		info.APIServer = "https://" + lb.HostAddr("apiserver")
	}
	return info
}

// rollback undoes a failed Up: components are killed (nothing they hold is
// worth flushing), and a new cluster's state dir is removed so that no
// half-made cluster is left behind. A kept cluster keeps its data.
func (c *Cluster) rollback(fresh, retain bool) {
	// Removing a Docker cluster's containers takes longer than stopping
	// goroutines.
	ctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
	defer cancel()
	if retain {
		c.logger.Warn("rollback skipped (--retain): the failed cluster's objects are kept for debugging", "cluster", c.spec.Name)
		c.ctl.close()
		return
	}
	if fresh {
		if err := c.rt.Remove(ctx); err != nil {
			c.logger.Warn("rollback: remove components", "err", err)
		}
	} else if infos, err := c.rt.List(ctx); err == nil {
		for _, ci := range infos {
			c.rt.Kill(ctx, ci.Ref)
		}
	}
	c.ctl.close()
	if fresh {
		// Only an empty dir goes: anything else in it is not ours to drop.
		os.Remove(c.dir)
	}
}
