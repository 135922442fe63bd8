package proxier

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ipvsKey is how the kernel finds a virtual service: protocol, address, port.
type ipvsKey struct {
	proto string
	addr  netip.Addr
	port  uint16
}

// protocolNumbers order virtual services as ipvsadm sorts them.
var protocolNumbers = map[string]int{"tcp": 6, "udp": 17, "sctp": 132}

// virtualServer is an IPVS virtual service: an address the node accepts
// connections on, its real servers and its scheduler.
type virtualServer struct {
	key   ipvsKey
	svc   ServicePortName
	via   EntryKind
	sched scheduler
	rs    []*realServer
	// emptyErr is what a connection gets when there are no real servers.
	emptyErr error
	// persistent is ClientIP session affinity (ipvsadm -p timeout): the
	// kernel keeps a template per client that pins it to a real server.
	persistent bool
	timeout    int
	templates  map[netip.Addr]persistTemplate
}

type persistTemplate struct {
	dest    netip.AddrPort
	expires time.Time
}

func (vs *virtualServer) realServer(ap netip.AddrPort) *realServer {
	for _, r := range vs.rs {
		if r.ep.addrPort() == ap {
			return r
		}
	}
	return nil
}

// IPVS is kube-proxy's ipvs mode: one virtual service per ClusterIP:port
// and per NodeIP:nodePort, found by hash, whose scheduler picks a real
// server. Sync counts virtual services plus real servers.
type IPVS struct {
	cfg Config

	mu         sync.Mutex
	services   map[ServicePortName]*ServiceInfo
	servers    map[ipvsKey]*virtualServer
	schedulers map[types.NamespacedName]string
}

var (
	_ Mode              = (*IPVS)(nil)
	_ ConnectionTracker = (*IPVS)(nil)
)

// NewIPVS returns an ipvs mode with no virtual services yet.
func NewIPVS(cfg Config) (*IPVS, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &IPVS{cfg: cfg, schedulers: make(map[types.NamespacedName]string)}, nil
}

// Name returns "ipvs".
func (m *IPVS) Name() string { return ModeIPVS }

// Retries is false: IPVS forwards to the real server it scheduled.
func (m *IPVS) Retries() bool { return false }

// SetScheduler makes the virtual services of one Service use the named
// scheduler instead of Config.IPVSScheduler; an empty name returns to the
// default. It applies at once: the scheduler starts afresh, as when
// ipvsadm -E changes it.
func (m *IPVS) SetScheduler(svc types.NamespacedName, name string) error {
	if name != "" {
		if _, err := newScheduler(name); err != nil {
			return fmt.Errorf("service %s: %w", svc, err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if name == "" {
		delete(m.schedulers, svc)
	} else {
		m.schedulers[svc] = name
	}
	for _, vs := range m.servers {
		if vs.svc.NamespacedName == svc {
			vs.sched, _ = newScheduler(m.schedulerFor(svc))
			vs.sched.update(vs.rs)
		}
	}
	return nil
}

func (m *IPVS) schedulerFor(svc types.NamespacedName) string {
	if name, ok := m.schedulers[svc]; ok {
		return name
	}
	return m.cfg.IPVSScheduler
}

// Sync builds the virtual services again. Like kube-proxy, which only adds
// and removes what changed, it keeps the kernel state of unchanged virtual
// services: the round-robin position, connection counters and persistence
// templates.
func (m *IPVS) Sync(snap *Snapshot) SyncResult {
	start := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	servers := make(map[ipvsKey]*virtualServer, 2*len(snap.Services))
	rules := 0
	for _, name := range snap.ServiceNames() {
		svc := snap.Services[name]
		sets := categorize(svc, snap.Endpoints[name])
		proto := name.protocol()

		internal, internalErr := sets.internal(svc)
		key := ipvsKey{proto, svc.ClusterIP, uint16(svc.Port)}
		servers[key] = m.buildVirtualServer(key, svc, ViaClusterIP, internal, internalErr)
		rules += 1 + len(internal)

		if svc.NodePort != 0 {
			external, externalErr := sets.external(svc)
			key := ipvsKey{proto, m.cfg.NodeIP, uint16(svc.NodePort)}
			servers[key] = m.buildVirtualServer(key, svc, ViaNodePort, external, externalErr)
			rules += 1 + len(external)
		}
	}
	m.services, m.servers = snap.Services, servers
	return SyncResult{Duration: time.Since(start), Rules: rules}
}

// buildVirtualServer makes one virtual service, carrying over the state of
// the one it replaces.
func (m *IPVS) buildVirtualServer(key ipvsKey, svc *ServiceInfo, via EntryKind, eps []Endpoint, emptyErr error) *virtualServer {
	vs := &virtualServer{
		key:        key,
		svc:        svc.Name,
		via:        via,
		emptyErr:   emptyErr,
		persistent: svc.SessionAffinity == corev1.ServiceAffinityClientIP,
		timeout:    svc.StickyMaxAgeSeconds,
		templates:  make(map[netip.Addr]persistTemplate),
		rs:         make([]*realServer, 0, len(eps)),
	}
	for _, ep := range eps {
		vs.rs = append(vs.rs, &realServer{ep: ep, weight: 1})
	}
	vs.sched, _ = newScheduler(m.schedulerFor(svc.Name.NamespacedName))

	old := m.servers[key]
	if old != nil {
		for _, r := range vs.rs {
			if o := old.realServer(r.ep.addrPort()); o != nil {
				r.activeConns, r.inactConns = o.activeConns, o.inactConns
			}
		}
		if vs.persistent && old.persistent {
			for client, t := range old.templates {
				if vs.realServer(t.dest) != nil {
					vs.templates[client] = t
				}
			}
		}
		if rr, ok := vs.sched.(*rrScheduler); ok && old.sched.name() == SchedulerRoundRobin {
			if last := old.sched.(*rrScheduler).last; last >= 0 && last < len(old.rs) {
				rr.last = slices.IndexFunc(vs.rs, func(r *realServer) bool {
					return r.ep.addrPort() == old.rs[last].ep.addrPort()
				})
			}
		}
	}
	vs.sched.update(vs.rs)
	return vs
}

// virtualServerFor finds the virtual service a connection to svc via the
// given entry reaches.
func (m *IPVS) virtualServerFor(svc ServicePortName, via EntryKind) (*virtualServer, error) {
	info, ok := m.services[svc]
	if !ok {
		return nil, ErrServiceNotFound
	}
	key := ipvsKey{svc.protocol(), info.ClusterIP, uint16(info.Port)}
	if via == ViaNodePort {
		if info.NodePort == 0 {
			return nil, ErrNoNodePort
		}
		key = ipvsKey{svc.protocol(), m.cfg.NodeIP, uint16(info.NodePort)}
	}
	vs, ok := m.servers[key]
	if !ok {
		return nil, ErrServiceNotFound
	}
	return vs, nil
}

// Pick looks the virtual service up by address and port, then lets a
// persistence template or the scheduler choose the real server. rng is not
// used: every IPVS scheduler is deterministic.
func (m *IPVS) Pick(svc ServicePortName, clientIP string, via EntryKind, _ *rand.Rand) (Endpoint, error) {
	src, err := parseClientIP(clientIP)
	if err != nil {
		return Endpoint{}, pickError(svc, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	vs, err := m.virtualServerFor(svc, via)
	if err != nil {
		return Endpoint{}, pickError(svc, err)
	}
	if len(vs.rs) == 0 {
		return Endpoint{}, pickError(svc, vs.emptyErr)
	}
	now := m.cfg.Now()
	if vs.persistent {
		if t, ok := vs.templates[src]; ok && now.Before(t.expires) {
			if r := vs.realServer(t.dest); r != nil {
				vs.templates[src] = persistTemplate{dest: t.dest, expires: now.Add(time.Duration(vs.timeout) * time.Second)}
				return r.ep, nil
			}
		}
	}
	r := vs.sched.schedule(vs.rs, src, vs.key.addr)
	if r == nil {
		return Endpoint{}, pickError(svc, ErrNoEndpoints)
	}
	if vs.persistent {
		vs.templates[src] = persistTemplate{dest: r.ep.addrPort(), expires: now.Add(time.Duration(vs.timeout) * time.Second)}
	}
	return r.ep, nil
}

// Connected counts a connection the caller opened to ep (ActiveConn).
func (m *IPVS) Connected(svc ServicePortName, via EntryKind, ep Endpoint) {
	m.adjustConns(svc, via, ep, +1)
}

// Disconnected counts the end of a connection Connected counted.
func (m *IPVS) Disconnected(svc ServicePortName, via EntryKind, ep Endpoint) {
	m.adjustConns(svc, via, ep, -1)
}

func (m *IPVS) adjustConns(svc ServicePortName, via EntryKind, ep Endpoint, delta int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	vs, err := m.virtualServerFor(svc, via)
	if err != nil {
		return
	}
	if r := vs.realServer(ep.addrPort()); r != nil {
		r.activeConns = max(0, r.activeConns+delta)
	}
}

// Render writes the table as "ipvsadm -Ln" prints it: virtual services
// sorted by protocol, address and port, each followed by its real servers
// sorted by address and port (Masq is kube-proxy's forwarding method, NAT).
func (m *IPVS) Render(w io.Writer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "IP Virtual Server version 1.2.1 (size=4096)\n")
	fmt.Fprintf(bw, "Prot LocalAddress:Port Scheduler Flags\n")
	fmt.Fprintf(bw, "  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n")
	servers := make([]*virtualServer, 0, len(m.servers))
	for _, vs := range m.servers {
		servers = append(servers, vs)
	}
	slices.SortFunc(servers, func(a, b *virtualServer) int {
		return cmp.Or(cmp.Compare(protocolNumbers[a.key.proto], protocolNumbers[b.key.proto]),
			a.key.addr.Compare(b.key.addr), cmp.Compare(a.key.port, b.key.port))
	})
	for _, vs := range servers {
		fmt.Fprintf(bw, "%s  %s %s", upperProto(vs.key.proto), netip.AddrPortFrom(vs.key.addr, vs.key.port), vs.sched.name())
		if vs.persistent {
			fmt.Fprintf(bw, " persistent %d", vs.timeout)
		}
		bw.WriteByte('\n')
		rs := slices.Clone(vs.rs)
		slices.SortFunc(rs, func(a, b *realServer) int { return a.ep.addrPort().Compare(b.ep.addrPort()) })
		for _, r := range rs {
			fmt.Fprintf(bw, "  -> %-28s %-7s %-6d %-10d %-10d\n", r.ep.addrPort(), "Masq", r.weight, r.activeConns, r.inactConns)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("render ipvs table: %w", err)
	}
	return nil
}

func upperProto(p string) string {
	switch p {
	case "udp":
		return "UDP"
	case "sctp":
		return "SCTP"
	}
	return "TCP"
}

// Cleanup deletes every virtual service (ipvsadm -C) and the scheduler
// overrides.
func (m *IPVS) Cleanup() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.services, m.servers = nil, nil
	m.schedulers = make(map[types.NamespacedName]string)
}
