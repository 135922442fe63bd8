package inprocess

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// Defaults for Config's optional fields.
const (
	// DefaultMemoryCapacity is the memory the node's containers may
	// allocate together when Config.MemoryCapacity is 0. They live in the
	// klab process, so a container without a limit must not be able to take
	// the whole machine down with klab.
	DefaultMemoryCapacity = 2 << 30
	// DefaultLogMaxSize is upstream's containerLogMaxSize (10Mi): the size at
	// which a container's log file is rotated.
	DefaultLogMaxSize = 10 << 20
	// eventBuffer is how many events wait for the kubelet before new ones
	// are dropped; as with upstream's evented PLEG, the kubelet's periodic
	// relist catches whatever was dropped.
	eventBuffer = 256
)

// errClosed is returned by every method once Close was called.
var errClosed = errors.New("container runtime is closed")

// Config configures a Runtime.
type Config struct {
	// NodeName is the node's name, for logs.
	NodeName string
	// PodCIDR is the node's pod range, an IPv4 CIDR on loopback such as
	// 127.250.1.0/24; every sandbox gets an address from it.
	PodCIDR string
	// LogDir is where container logs are written (upstream's /var/log/pods).
	LogDir string
	// RootDir is where pods' filesystems are made (what exec's shell
	// sees as /); empty means "rootfs" next to LogDir.
	RootDir string
	// LogMaxSize bounds a container's log file; 0 means DefaultLogMaxSize.
	LogMaxSize int64
	// MemoryCapacity is the memory the node's containers may allocate
	// together; 0 means DefaultMemoryCapacity.
	MemoryCapacity int64
	// Logger receives the runtime's own logs; nil discards them.
	Logger *slog.Logger
	// Dial connects the network tools of a pod's shell (wget, curl,
	// nslookup) from source, the pod's address, to addr: the local
	// runtime's reaches ClusterIPs through the node's kube-proxy. nil dials
	// directly.
	Dial func(ctx context.Context, source netip.Addr, network, addr string) (net.Conn, error)
}

// Runtime runs a node's containers inside the klab process. It implements
// cri.Runtime.
type Runtime struct {
	cfg       Config
	logger    *slog.Logger
	ips       *ipPool
	memory    *nodeMemory
	imageSize int64

	mu         sync.Mutex
	closed     bool
	events     chan cri.Event
	sandboxes  map[string]*sandbox
	containers map[string]*container
	// names reserves each sandbox/name/attempt for one container, as
	// containerd reserves container names.
	names map[string]string
	// tags are the tags of klab images used on this node, for ListImages.
	tags map[string]map[string]bool
	// running counts container goroutines, which Close waits for.
	running sync.WaitGroup
}

var _ cri.Runtime = (*Runtime)(nil)

// New returns a runtime for one node.
func New(cfg Config) (*Runtime, error) {
	if cfg.LogDir == "" {
		return nil, errors.New("create in-process runtime: no log directory")
	}
	if cfg.RootDir == "" {
		cfg.RootDir = filepath.Join(filepath.Dir(filepath.Clean(cfg.LogDir)), "rootfs")
	}
	if err := os.MkdirAll(cfg.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("create in-process runtime: %w", err)
	}
	ips, err := newIPPool(cfg.PodCIDR)
	if err != nil {
		return nil, fmt.Errorf("create in-process runtime: %w", err)
	}
	if cfg.LogMaxSize <= 0 {
		cfg.LogMaxSize = DefaultLogMaxSize
	}
	if cfg.MemoryCapacity <= 0 {
		cfg.MemoryCapacity = DefaultMemoryCapacity
	}
	return &Runtime{
		cfg:        cfg,
		logger:     componentbase.Logger(cfg.Logger).With("node", cfg.NodeName, "runtime", "local"),
		ips:        ips,
		memory:     &nodeMemory{capacity: cfg.MemoryCapacity},
		imageSize:  executableSize(),
		events:     make(chan cri.Event, eventBuffer),
		sandboxes:  map[string]*sandbox{},
		containers: map[string]*container{},
		names:      map[string]string{},
		tags:       map[string]map[string]bool{},
	}, nil
}

// Name returns "local".
func (r *Runtime) Name() string { return "local" }

// Events delivers container lifecycle events until Close.
func (r *Runtime) Events() <-chan cri.Event { return r.events }

// emit sends an event without blocking: a kubelet that does not keep up
// loses events, not the runtime its progress.
func (r *Runtime) emit(typ cri.EventType, c *container) {
	ev := cri.Event{Type: typ, ContainerID: c.id, SandboxID: c.sandboxID, Labels: maps.Clone(c.cfg.Labels)}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	select {
	case r.events <- ev:
	default:
		r.logger.Warn("Dropped container event, the kubelet is not reading", "type", typ, "container", c.id)
	}
}

// Close kills every container, waits for them to exit, and closes Events.
func (r *Runtime) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	close(r.events)
	containers := make([]*container, 0, len(r.containers))
	for _, c := range r.containers {
		containers = append(containers, c)
	}
	for _, sb := range r.sandboxes {
		if sb.ready {
			sb.ready = false
			r.ips.release(sb.ip)
		}
	}
	r.mu.Unlock()

	for _, c := range containers {
		c.signalKill()
	}
	r.running.Wait()
	for _, c := range containers {
		c.log.close()
	}
	return nil
}

// newID returns a random 64-hex-digit ID, as container IDs are.
func newID() string {
	var b [32]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
