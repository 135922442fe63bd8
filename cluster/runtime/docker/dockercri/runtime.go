package dockercri

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// eventBuffer is how many events wait for the kubelet before new ones are
// dropped; as with upstream's evented PLEG, the kubelet's periodic relist
// catches whatever was dropped.
const eventBuffer = 256

// errClosed is returned by every method once Close was called.
var errClosed = errors.New("container runtime is closed")

// Runtime runs a node's pods as Docker containers. It implements
// cri.Runtime.
type Runtime struct {
	cfg     Config
	podCIDR netip.Prefix
	docker  *client.Client
	logger  *slog.Logger
	// kubeletVol is where the engine keeps the kubelet's volume.
	kubeletVol kubeletVolume
	// sandboxMu makes choosing a sandbox's address and starting the
	// sandbox one step, so that two sandboxes never pick the same free
	// address.
	sandboxMu sync.Mutex
	inspected inspectCache
	// oomKilled holds the containers the engine reported an "oom" event
	// for. The engine handles containerd's OOM and exit notices one after
	// the other, so an inspect between the two shows exit 137 without
	// State.OOMKilled; the event settles it.
	oomKilled sync.Map

	closed     atomic.Bool
	events     chan cri.Event
	stopEvents context.CancelFunc
	eventsDone chan struct{}
}

var _ cri.Runtime = (*Runtime)(nil)

// New connects to the Docker engine of the environment (DOCKER_HOST, or
// the default socket), checks that the network and the pause image are
// there, and starts following the engine's events.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	podCIDR, err := cfg.validate()
	if err != nil {
		return nil, fmt.Errorf("create docker container runtime: %w", err)
	}
	docker, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("create docker container runtime: %w", err)
	}
	r := &Runtime{cfg: cfg, podCIDR: podCIDR, docker: docker}
	if err := r.check(ctx); err != nil {
		docker.Close()
		return nil, fmt.Errorf("create docker container runtime: %w", err)
	}
	r.logger = componentbase.Logger(cfg.Logger).With("node", cfg.Node, "runtime", "docker")
	r.inspected.entries = map[string]container.InspectResponse{}
	r.events = make(chan cri.Event, eventBuffer)
	r.eventsDone = make(chan struct{})
	eventsCtx, stop := context.WithCancel(context.Background())
	r.stopEvents = stop
	go r.watchEvents(eventsCtx)
	return r, nil
}

// check verifies that the engine answers, that the network can give pods
// fixed addresses from the pod CIDR, and that the pause image is present.
func (r *Runtime) check(ctx context.Context) error {
	if _, err := r.docker.Ping(ctx); err != nil {
		return fmt.Errorf("the Docker engine does not answer (is its socket mounted into the kubelet's container?): %w", err)
	}
	nw, err := r.docker.NetworkInspect(ctx, r.cfg.Network, network.InspectOptions{})
	if err != nil {
		return fmt.Errorf("inspect network %s: %w", r.cfg.Network, err)
	}
	inSubnet := false
	for _, c := range nw.IPAM.Config {
		subnet, err := netip.ParsePrefix(c.Subnet)
		if err == nil && subnet.Bits() <= r.podCIDR.Bits() && subnet.Contains(r.podCIDR.Addr()) {
			inSubnet = true
		}
	}
	if !inSubnet {
		return fmt.Errorf("pod CIDR %s is not inside a subnet of network %s: Docker gives fixed addresses only from a network's own subnets", r.podCIDR, r.cfg.Network)
	}
	if _, err := r.docker.ImageInspect(ctx, r.cfg.PauseImage); err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("pause image %s is not on the Docker engine", r.cfg.PauseImage)
		}
		return fmt.Errorf("inspect pause image %s: %w", r.cfg.PauseImage, err)
	}
	return nil
}

// Name returns "docker".
func (r *Runtime) Name() string { return "docker" }

// Events delivers container lifecycle events until Close.
func (r *Runtime) Events() <-chan cri.Event { return r.events }

// Close stops following the engine's events, closes Events and releases
// the connection to the engine. Unlike the in-process runtime it leaves
// the pods running: they are Docker's, not the kubelet process's, and a
// restarted kubelet takes them over, as it does on a real node.
func (r *Runtime) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	r.stopEvents()
	<-r.eventsDone
	close(r.events)
	return r.docker.Close()
}

// ownLabels are the labels every object the runtime creates carries.
func (r *Runtime) ownLabels(role string) map[string]string {
	return map[string]string{labels.Cluster: r.cfg.Cluster, labels.Node: r.cfg.Node, labels.Role: role}
}

// ownFilter finds the node's objects of a role, and further labels.
func (r *Runtime) ownFilter(role string, extra ...string) filters.Args {
	args := filters.NewArgs(
		filters.Arg("label", labels.ClusterFilter(r.cfg.Cluster)),
		filters.Arg("label", labels.Filter(labels.Node, r.cfg.Node)),
		filters.Arg("label", labels.Filter(labels.Role, role)),
	)
	for _, f := range extra {
		args.Add("label", f)
	}
	return args
}

// owns reports whether a container's labels make it the node's, of role.
func (r *Runtime) owns(l map[string]string, role string) bool {
	return l[labels.Cluster] == r.cfg.Cluster && l[labels.Node] == r.cfg.Node && l[labels.Role] == role
}

// inspect returns one of the node's containers of a role; an error wrapping
// cri.ErrNotFound if Docker has no such container or it is not the node's.
func (r *Runtime) inspect(ctx context.Context, id, role string) (container.InspectResponse, error) {
	if r.closed.Load() {
		return container.InspectResponse{}, errClosed
	}
	info, err := r.docker.ContainerInspect(ctx, id)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return container.InspectResponse{}, cri.ErrNotFound
		}
		return container.InspectResponse{}, err
	}
	if info.ContainerJSONBase == nil || info.State == nil || info.Config == nil || !r.owns(info.Config.Labels, role) {
		return container.InspectResponse{}, cri.ErrNotFound
	}
	return info, nil
}

// list inspects the node's containers of a role (running or not), oldest
// first. A container removed while it is listed is left out.
func (r *Runtime) list(ctx context.Context, role string, extra ...string) ([]container.InspectResponse, error) {
	if r.closed.Load() {
		return nil, errClosed
	}
	summaries, err := r.docker.ContainerList(ctx, container.ListOptions{All: true, Filters: r.ownFilter(role, extra...)})
	if err != nil {
		return nil, err
	}
	list := make([]container.InspectResponse, 0, len(summaries))
	for _, s := range summaries {
		info, ok := r.inspected.get(s.ID, s.State)
		if !ok {
			info, err = r.inspect(ctx, s.ID, role)
			if errors.Is(err, cri.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			r.inspected.put(info)
		}
		list = append(list, info)
	}
	if len(extra) == 0 {
		r.inspected.prune(role, summaries)
	}
	sortOldestFirst(list)
	return list, nil
}

// inspectCache keeps what inspecting a container said while its state
// stays the same, so that the kubelet's frequent relists cost Docker one
// list call, not one inspect per container. Only running and exited
// containers are kept: a container that failed to start stays "created"
// while its inspect changes.
type inspectCache struct {
	mu      sync.Mutex
	entries map[string]container.InspectResponse
}

func (c *inspectCache) get(id, state string) (container.InspectResponse, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	info, ok := c.entries[id]
	if !ok || info.State.Status != state {
		return container.InspectResponse{}, false
	}
	return info, true
}

func (c *inspectCache) put(info container.InspectResponse) {
	if info.State != nil && info.State.ExitCode == exitCodeOOMKilled && !info.State.OOMKilled {
		// Maybe the OOM notice is still on its way: look again next time.
		return
	}
	switch info.State.Status {
	case "running", "exited", "dead":
		c.mu.Lock()
		defer c.mu.Unlock()
		c.entries[info.ID] = info
	}
}

func (c *inspectCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, id)
}

// prune forgets the containers of a role that a full list no longer shows.
func (c *inspectCache) prune(role string, listed []container.Summary) {
	seen := make(map[string]bool, len(listed))
	for _, s := range listed {
		seen[s.ID] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, info := range c.entries {
		if info.Config.Labels[labels.Role] == role && !seen[id] {
			delete(c.entries, id)
		}
	}
}
