package lb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
)

// Defaults for Config's zero values.
const (
	DefaultInterval    = time.Second
	DefaultTimeout     = 2 * time.Second
	DefaultDialTimeout = 3 * time.Second
)

// Config configures a Balancer.
type Config struct {
	// Listen is the address to listen on, such as "127.0.0.1:6443".
	Listen string
	// Backends are the API servers' host:port addresses.
	Backends []string
	// Health checks one backend; nil means a TCP connect.
	Health func(ctx context.Context, backend string) error
	// Interval is the time between two checks of a backend
	// (DefaultInterval when zero).
	Interval time.Duration
	// Timeout bounds one check (DefaultTimeout when zero).
	Timeout time.Duration
	// Dial connects to a backend, for the proxied connections and the
	// default health check; nil means a net.Dialer with
	// DefaultDialTimeout. The local runtime passes its fault-injecting
	// dialer here.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// OnHealthChange, if set, is called whenever a check moves a backend
	// in or out of the rotation. It runs on the checking goroutine and
	// must not block.
	OnHealthChange func(BackendStatus)
}

// BackendStatus is what the balancer knows about one backend.
type BackendStatus struct {
	Backend string `json:"backend"`
	Healthy bool   `json:"healthy"`
	// LastError is the error of the last failed check, kept after later
	// good checks so it can still be shown.
	LastError string `json:"lastError,omitempty"`
	// LastCheck is when the last check finished; zero before the first.
	LastCheck   time.Time `json:"lastCheck,omitzero"`
	ActiveConns int       `json:"activeConns"`
	TotalConns  uint64    `json:"totalConns"`
}

// Balancer is a running load balancer. Its Lifecycle gives it Stop, Kill,
// Done and Err, as every component has: both stops close the listener and
// every proxied connection (the balancer holds nothing a graceful stop
// would save) and wait for its goroutines.
type Balancer struct {
	*componentbase.Lifecycle

	cfg      Config
	listener net.Listener
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu       sync.Mutex
	backends []*BackendStatus // in Config.Backends order
	next     uint64           // round-robin position among healthy backends
	conns    map[net.Conn]struct{}
	closed   bool

	closeOnce sync.Once
}

// Start listens on cfg.Listen, starts checking the backends and serves
// until ctx ends or it is stopped.
func Start(ctx context.Context, cfg Config) (*Balancer, error) {
	if len(cfg.Backends) == 0 {
		return nil, errors.New("start load balancer: no backends")
	}
	seen := make(map[string]bool)
	for _, be := range cfg.Backends {
		if _, _, err := net.SplitHostPort(be); err != nil {
			return nil, fmt.Errorf("start load balancer: backend %q: %w", be, err)
		}
		if seen[be] {
			return nil, fmt.Errorf("start load balancer: backend %q given twice", be)
		}
		seen[be] = true
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Dial == nil {
		d := &net.Dialer{Timeout: DefaultDialTimeout}
		cfg.Dial = d.DialContext
	}
	if cfg.Health == nil {
		cfg.Health = tcpHealth(cfg.Dial)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("start load balancer: %w", err)
	}
	b := &Balancer{cfg: cfg, listener: ln, conns: make(map[net.Conn]struct{})}
	b.ctx, b.cancel = context.WithCancel(ctx)
	b.Lifecycle = componentbase.NewLifecycle(func(bool) {
		b.cancel()
		b.wg.Wait()
	})
	b.Begin()
	for _, addr := range cfg.Backends {
		b.backends = append(b.backends, &BackendStatus{Backend: addr, Healthy: true})
	}
	for _, be := range b.backends {
		b.wg.Add(1)
		go b.checkLoop(be)
	}
	b.wg.Add(2)
	go b.acceptLoop()
	go func() {
		defer b.wg.Done()
		<-b.ctx.Done()
		b.shutdown()
	}()
	return b, nil
}

// Addr returns the address the balancer listens on.
func (b *Balancer) Addr() string { return b.listener.Addr().String() }

// Status returns each backend's state, in Config.Backends order.
func (b *Balancer) Status() []BackendStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]BackendStatus, len(b.backends))
	for i, be := range b.backends {
		out[i] = *be
	}
	return out
}

// shutdown closes the listener and every open connection, once.
func (b *Balancer) shutdown() {
	b.closeOnce.Do(func() {
		b.listener.Close()
		b.mu.Lock()
		b.closed = true
		for c := range b.conns {
			c.Close()
		}
		b.mu.Unlock()
	})
}

func (b *Balancer) acceptLoop() {
	defer b.wg.Done()
	for {
		client, err := b.listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || b.ctx.Err() != nil {
				return
			}
			// Out of file descriptors and the like: wait a little
			// rather than spin, as net/http's server does.
			select {
			case <-time.After(50 * time.Millisecond):
				continue
			case <-b.ctx.Done():
				return
			}
		}
		if !b.track(client) {
			client.Close()
			return
		}
		b.wg.Add(1)
		go b.serve(client)
	}
}

// track records an open connection so shutdown can close it; it reports
// false once the balancer is shutting down.
func (b *Balancer) track(c net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.conns[c] = struct{}{}
	return true
}

func (b *Balancer) untrack(c net.Conn) {
	b.mu.Lock()
	delete(b.conns, c)
	b.mu.Unlock()
}

// serve connects client to a backend and copies bytes until both sides
// are done.
func (b *Balancer) serve(client net.Conn) {
	defer b.wg.Done()
	defer b.untrack(client)
	defer client.Close()

	server, be := b.dialBackend()
	if server == nil {
		return // no healthy backend answered: drop the client now
	}
	if !b.track(server) {
		server.Close()
		b.release(be)
		return
	}
	defer b.untrack(server)
	defer b.release(be)
	proxy(client, server)
}

// dialBackend connects to the next healthy backend in turn. If that dial
// fails it tries the following healthy ones, each once, before giving up,
// so a backend that died since its last check does not cost the client
// its connection.
func (b *Balancer) dialBackend() (net.Conn, *BackendStatus) {
	for _, be := range b.pick() {
		conn, err := b.cfg.Dial(b.ctx, "tcp", be.Backend)
		if err != nil {
			continue
		}
		b.mu.Lock()
		be.ActiveConns++
		be.TotalConns++
		b.mu.Unlock()
		return conn, be
	}
	return nil, nil
}

// pick returns the healthy backends in the order to try them: starting
// with the next one in the rotation.
func (b *Balancer) pick() []*BackendStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	var healthy []*BackendStatus
	for _, be := range b.backends {
		if be.Healthy {
			healthy = append(healthy, be)
		}
	}
	if len(healthy) == 0 {
		return nil
	}
	start := int(b.next % uint64(len(healthy)))
	b.next++
	order := make([]*BackendStatus, 0, len(healthy))
	order = append(order, healthy[start:]...)
	return append(order, healthy[:start]...)
}

func (b *Balancer) release(be *BackendStatus) {
	b.mu.Lock()
	be.ActiveConns--
	b.mu.Unlock()
}
