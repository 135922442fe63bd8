// Package local is the in-process runtime, klab's embedded default: every
// component of the cluster runs inside the klab process.
//
// It is an honest twin of the Docker runtime rather than a shortcut. Each
// node has its own loopback address (see NodeHost) and each component its
// own listeners and data dir under the cluster's state dir, so components
// still talk to each other only over the network. Stopping or killing a
// component closes its listeners; pausing freezes it. Partitions are
// enforced by a fault.Table that every in-process raft transport consults,
// keyed by node name (an etcd member is named after its node).
package local

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/etcd/fault"
	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/runtime"
)

// Name is the runtime's name.
const Name = "local"

// Options configures a Runtime.
type Options struct {
	// Cluster is the cluster's name.
	Cluster string
	// Dir is the cluster's state dir; nodes' data and logs go under
	// Dir/nodes/<node>/.
	Dir string
	// Logger receives the runtime's own log (not the components'); nil
	// discards it.
	Logger *slog.Logger
}

// Runtime runs one cluster's components in this process.
type Runtime struct {
	opts   Options
	faults *fault.Table

	mu    sync.Mutex
	nodes map[string]runtime.Node
	order []runtime.Ref
	comps map[runtime.Ref]*component
}

var _ runtime.Runtime = (*Runtime)(nil)

// New returns a runtime for one cluster with a healthy network.
func New(opts Options) *Runtime {
	opts.Logger = componentbase.Logger(opts.Logger)
	return &Runtime{
		opts:   opts,
		faults: fault.NewTable(),
		nodes:  map[string]runtime.Node{},
		comps:  map[runtime.Ref]*component{},
	}
}

// Name returns "local".
func (r *Runtime) Name() string { return Name }

// Faults returns the fault table that enforces partitions, so that a viewer
// can show which links are cut.
func (r *Runtime) Faults() *fault.Table { return r.faults }

// NodeDir returns the directory holding a node's data and logs.
func (r *Runtime) NodeDir(node string) string { return filepath.Join(r.opts.Dir, "nodes", node) }

// CreateNode places the node on its loopback address and grants its ports.
func (r *Runtime) CreateNode(ctx context.Context, spec runtime.NodeSpec) (runtime.Node, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.nodes[spec.Name]; ok {
		return runtime.Node{}, fmt.Errorf("create node %s: already exists", spec.Name)
	}
	host, err := NodeHost(r.opts.Cluster, spec.Role, spec.Index)
	if err != nil {
		return runtime.Node{}, fmt.Errorf("create node %s: %w", spec.Name, err)
	}
	node := runtime.Node{Name: spec.Name, Role: spec.Role, Index: spec.Index, Host: host}
	if spec.Reuse != nil {
		if spec.Reuse.Host != host {
			return runtime.Node{}, fmt.Errorf("create node %s: its previous address %s differs from %s on this system", spec.Name, spec.Reuse.Host, host)
		}
		if err := checkPortsFree(host, spec.Reuse.Ports); err != nil {
			return runtime.Node{}, fmt.Errorf("create node %s: %w", spec.Name, err)
		}
		node.Ports = maps.Clone(spec.Reuse.Ports)
		// A port the previous run did not have (a component added since)
		// is allocated as for a new node.
		var missing []runtime.Port
		for _, p := range spec.Ports {
			if _, ok := node.Ports[p.Name]; !ok {
				missing = append(missing, p)
			}
		}
		if len(missing) > 0 {
			extra, err := allocatePorts(host, missing)
			if err != nil {
				return runtime.Node{}, fmt.Errorf("create node %s: %w", spec.Name, err)
			}
			maps.Copy(node.Ports, extra)
		}
	} else if node.Ports, err = allocatePorts(host, spec.Ports); err != nil {
		return runtime.Node{}, fmt.Errorf("create node %s: %w", spec.Name, err)
	}
	if err := os.MkdirAll(r.NodeDir(spec.Name), 0o700); err != nil {
		return runtime.Node{}, fmt.Errorf("create node %s: %w", spec.Name, err)
	}
	r.nodes[spec.Name] = node
	r.opts.Logger.Debug("node created", "node", spec.Name, "host", host, "ports", node.Ports)
	return node, nil
}

// newGate returns the network gate of a new client process on node.
func (r *Runtime) newGate(node string) *netGate {
	return newNetGate(node, r.faults, r.nodeAt)
}

// nodeAt returns the node listening at host:port.
func (r *Runtime) nodeAt(addr string) (string, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.nodes {
		if n.Host != host {
			continue
		}
		for _, p := range n.Ports {
			if strconv.Itoa(p) == port {
				return n.Name, true
			}
		}
	}
	return "", false
}

// CreateComponent registers a component on a created node.
func (r *Runtime) CreateComponent(ctx context.Context, spec runtime.ComponentSpec) error {
	if err := spec.Validate(); err != nil {
		return fmt.Errorf("create component %s: %w", spec.Ref, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.nodes[spec.Ref.Node]; !ok {
		return fmt.Errorf("create component %s: node %s: %w", spec.Ref, spec.Ref.Node, runtime.ErrNotFound)
	}
	if _, ok := r.comps[spec.Ref]; ok {
		return fmt.Errorf("create component %s: already exists", spec.Ref)
	}
	if spec.Etcd != nil && spec.Etcd.DataDir == "" {
		member := *spec.Etcd
		member.DataDir = filepath.Join(r.NodeDir(spec.Ref.Node), spec.Ref.Component)
		spec.Etcd = &member
	}
	r.comps[spec.Ref] = &component{
		spec:         spec,
		startProcess: r.startProcess,
		logPath:      filepath.Join(r.NodeDir(spec.Ref.Node), spec.Ref.Component+".log"),
		state:        runtime.StateCreated,
	}
	r.order = append(r.order, spec.Ref)
	return nil
}

func (r *Runtime) component(ref runtime.Ref) (*component, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.comps[ref]
	if !ok {
		return nil, fmt.Errorf("component %s: %w", ref, runtime.ErrNotFound)
	}
	return c, nil
}

// Start starts a component and returns once it serves.
func (r *Runtime) Start(ctx context.Context, ref runtime.Ref) error {
	c, err := r.component(ref)
	if err != nil {
		return err
	}
	return c.start(ctx)
}

// Stop shuts a component down gracefully.
func (r *Runtime) Stop(ctx context.Context, ref runtime.Ref) error {
	c, err := r.component(ref)
	if err != nil {
		return err
	}
	return c.stop()
}

// Kill stops a component abruptly.
func (r *Runtime) Kill(ctx context.Context, ref runtime.Ref) error {
	c, err := r.component(ref)
	if err != nil {
		return err
	}
	return c.kill()
}

// Pause freezes a running component.
func (r *Runtime) Pause(ctx context.Context, ref runtime.Ref) error {
	c, err := r.component(ref)
	if err != nil {
		return err
	}
	return c.pause()
}

// Resume thaws a paused component.
func (r *Runtime) Resume(ctx context.Context, ref runtime.Ref) error {
	c, err := r.component(ref)
	if err != nil {
		return err
	}
	return c.resume()
}

// Partition cuts every link between the nodes of a and those of b.
func (r *Runtime) Partition(ctx context.Context, a, b []string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range append(append([]string{}, a...), b...) {
		if _, ok := r.nodes[n]; !ok {
			return fmt.Errorf("partition: node %s: %w", n, runtime.ErrNotFound)
		}
	}
	r.faults.Partition(a, b)
	return nil
}

// Heal removes every partition.
func (r *Runtime) Heal(ctx context.Context) error {
	r.faults.Heal()
	return nil
}

// List reports every component in creation order.
func (r *Runtime) List(ctx context.Context) ([]runtime.ComponentInfo, error) {
	r.mu.Lock()
	refs := append([]runtime.Ref(nil), r.order...)
	comps := make([]*component, 0, len(refs))
	for _, ref := range refs {
		comps = append(comps, r.comps[ref])
	}
	r.mu.Unlock()
	infos := make([]runtime.ComponentInfo, 0, len(comps))
	for _, c := range comps {
		infos = append(infos, c.info())
	}
	return infos, nil
}

// Logs opens a component's log file.
func (r *Runtime) Logs(ctx context.Context, ref runtime.Ref) (io.ReadCloser, error) {
	c, err := r.component(ref)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(c.logPath)
	if err != nil {
		return nil, fmt.Errorf("logs of %s: %w", ref, err)
	}
	return f, nil
}

// Remove kills every component (their data is about to go, so there is
// nothing to flush) and deletes the nodes' data and logs.
func (r *Runtime) Remove(ctx context.Context) error {
	r.mu.Lock()
	refs := append([]runtime.Ref(nil), r.order...)
	r.mu.Unlock()
	for _, ref := range refs {
		if err := r.Kill(ctx, ref); err != nil {
			return fmt.Errorf("remove cluster %s: %w", r.opts.Cluster, err)
		}
	}
	r.faults.Heal()
	if err := os.RemoveAll(filepath.Join(r.opts.Dir, "nodes")); err != nil {
		return fmt.Errorf("remove cluster %s: %w", r.opts.Cluster, err)
	}
	r.mu.Lock()
	r.nodes = map[string]runtime.Node{}
	r.comps = map[runtime.Ref]*component{}
	r.order = nil
	r.mu.Unlock()
	return nil
}

// RestoreEtcd restores the stopped etcd member ref's data dir, the one its
// spec names, from the snapshot, in place (etcd.RestoreInPlace).
func (r *Runtime) RestoreEtcd(ctx context.Context, ref runtime.Ref, cfg etcd.RestoreConfig) (*etcd.RestoreResult, error) {
	c, err := r.component(ref)
	if err != nil {
		return nil, err
	}
	if c.spec.Etcd == nil {
		return nil, fmt.Errorf("component %s is not an etcd member", ref)
	}
	if ci := c.info(); ci.State == runtime.StateRunning || ci.State == runtime.StatePaused {
		return nil, fmt.Errorf("restore etcd member %s: it is %s; stop it first", ref, ci.State)
	}
	cfg.DataDir = c.spec.Etcd.DataDir
	return etcd.RestoreInPlace(cfg)
}
