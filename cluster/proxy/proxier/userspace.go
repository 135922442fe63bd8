package proxier

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Chains of the userspace proxier: "portals" send ClusterIP traffic, and
// the NodePort chains NodePort traffic, to the proxy's own socket for the
// service; traffic from containers arrives through PREROUTING, traffic from
// the node itself through OUTPUT.
const (
	portalsContainerChain  = "KUBE-PORTALS-CONTAINER"
	portalsHostChain       = "KUBE-PORTALS-HOST"
	nodePortContainerChain = "KUBE-NODEPORT-CONTAINER"
	nodePortHostChain      = "KUBE-NODEPORT-HOST"
	nodePortNonLocalChain  = "KUBE-NODEPORT-NON-LOCAL"
)

// EndpointDialTimeouts are the userspace proxier's dial attempts for one
// connection: one endpoint per attempt, each with a longer timeout.
var EndpointDialTimeouts = []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, 1 * time.Second, 2 * time.Second}

// ErrDialFailed is returned by Userspace.Connect when every attempt failed.
var ErrDialFailed = errors.New("failed to connect to an endpoint")

// DialFunc opens a connection to an endpoint within timeout; Connect calls
// it once per attempt.
type DialFunc func(ep Endpoint, timeout time.Duration) error

// rrBalancer is upstream's LoadBalancerRR state for one service port: the
// endpoints, the next index, and the ClientIP affinity map.
type rrBalancer struct {
	endpoints []Endpoint
	index     int
	affinity  map[netip.Addr]*affinityEntry
}

type affinityEntry struct {
	endpoint Endpoint
	lastUsed time.Time
}

// usService is what the userspace proxier keeps for one service port.
type usService struct {
	info      *ServiceInfo
	proxyPort int
	// cluster serves traffic under the Cluster policy, local under Local;
	// a service with no Local policy only has cluster.
	cluster, local       *rrBalancer
	clusterErr, localErr error
}

// Userspace is kube-proxy's userspace mode: the proxy accepts every
// connection on a port of its own and dials an endpoint itself, round robin.
// Upstream's userspace proxier predates traffic policies; klab applies
// internalTrafficPolicy and externalTrafficPolicy in this mode too, so that
// a lesson about them holds whatever the mode. Sync counts the portal rules.
type Userspace struct {
	cfg Config

	mu       sync.Mutex
	services map[ServicePortName]*usService
	saved    []byte
	rules    int
}

var _ Mode = (*Userspace)(nil)

// NewUserspace returns a userspace mode with no services yet.
func NewUserspace(cfg Config) (*Userspace, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Userspace{cfg: cfg}, nil
}

// Name returns "userspace".
func (m *Userspace) Name() string { return ModeUserspace }

// Retries is true: when a dial fails, the proxy tries the next endpoint.
func (m *Userspace) Retries() bool { return true }

// ProxyPort returns the local port the proxy listens on for a service port,
// the port its portal rules redirect to.
func (m *Userspace) ProxyPort(svc ServicePortName) (int, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.services[svc]
	if !ok {
		return 0, false
	}
	return s.proxyPort, true
}

// Sync updates the balancers and rewrites the portal rules. A balancer
// whose endpoints did not change keeps its position and its affinity; when
// they changed it starts over at the first endpoint and forgets affinity to
// endpoints that are gone, as upstream's OnEndpointsUpdate does.
func (m *Userspace) Sync(snap *Snapshot) SyncResult {
	start := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.services
	services := make(map[ServicePortName]*usService, len(snap.Services))
	used := make(map[int]bool)
	for name, s := range old {
		if _, ok := snap.Services[name]; ok {
			used[s.proxyPort] = true
		}
	}
	nextPort := m.cfg.UserspacePortBase
	for _, name := range snap.ServiceNames() {
		info := snap.Services[name]
		sets := categorize(info, snap.Endpoints[name])
		s := &usService{info: info}
		if o, ok := old[name]; ok {
			s.proxyPort = o.proxyPort
		} else {
			for used[nextPort] {
				nextPort++
			}
			s.proxyPort = nextPort
			used[nextPort] = true
		}
		var prevCluster, prevLocal *rrBalancer
		if o, ok := old[name]; ok {
			prevCluster, prevLocal = o.cluster, o.local
		}
		var clusterEps, localEps []Endpoint
		clusterEps, s.clusterErr = sets.forPolicy(false)
		s.cluster = updateBalancer(prevCluster, clusterEps)
		if info.UsesLocalEndpoints() {
			localEps, s.localErr = sets.forPolicy(true)
			s.local = updateBalancer(prevLocal, localEps)
		}
		services[name] = s
	}
	m.services = services
	m.saved, m.rules = m.portalRules(snap.ServiceNames())
	return SyncResult{Duration: time.Since(start), Rules: m.rules}
}

func updateBalancer(prev *rrBalancer, eps []Endpoint) *rrBalancer {
	if prev != nil && slices.Equal(prev.endpoints, eps) {
		return prev
	}
	b := &rrBalancer{endpoints: eps, affinity: make(map[netip.Addr]*affinityEntry)}
	if prev != nil {
		for client, a := range prev.affinity {
			if slices.ContainsFunc(eps, func(e Endpoint) bool { return e.addrPort() == a.endpoint.addrPort() }) {
				b.affinity[client] = a
			}
		}
	}
	return b
}

// balancerFor picks the balancer of the traffic policy that applies.
func (s *usService) balancerFor(via EntryKind) (*rrBalancer, error) {
	local := s.info.InternalPolicyLocal
	if via == ViaNodePort {
		local = s.info.ExternalPolicyLocal
	}
	if local {
		return s.local, s.localErr
	}
	return s.cluster, s.clusterErr
}

// NextEndpoint is upstream's LoadBalancerRR.NextEndpoint: with ClientIP
// affinity, a client seen within the timeout gets its endpoint again unless
// sessionAffinityReset (set after a failed dial); otherwise the next
// endpoint in turn.
func (m *Userspace) NextEndpoint(svc ServicePortName, clientIP string, via EntryKind, sessionAffinityReset bool) (Endpoint, error) {
	src, err := parseClientIP(clientIP)
	if err != nil {
		return Endpoint{}, pickError(svc, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.services[svc]
	if !ok {
		return Endpoint{}, pickError(svc, ErrServiceNotFound)
	}
	if via == ViaNodePort && s.info.NodePort == 0 {
		return Endpoint{}, pickError(svc, ErrNoNodePort)
	}
	b, err := s.balancerFor(via)
	if err != nil {
		return Endpoint{}, pickError(svc, err)
	}
	now := m.cfg.Now()
	sticky := s.info.SessionAffinity == corev1.ServiceAffinityClientIP
	if sticky && !sessionAffinityReset {
		if a, ok := b.affinity[src]; ok && now.Sub(a.lastUsed) < time.Duration(s.info.StickyMaxAgeSeconds)*time.Second {
			a.lastUsed = now
			return a.endpoint, nil
		}
	}
	ep := b.endpoints[b.index]
	b.index = (b.index + 1) % len(b.endpoints)
	if sticky {
		b.affinity[src] = &affinityEntry{endpoint: ep, lastUsed: now}
	}
	return ep, nil
}

// Pick returns the endpoint the proxy dials first for a new connection.
// rng is not used: round robin is deterministic.
func (m *Userspace) Pick(svc ServicePortName, clientIP string, via EntryKind, _ *rand.Rand) (Endpoint, error) {
	return m.NextEndpoint(svc, clientIP, via, false)
}

// Connect is upstream's TryConnectEndpoints: for each timeout in
// EndpointDialTimeouts it takes the next endpoint and dials it; after a
// failure it ignores session affinity, so the retry goes elsewhere. It
// returns the endpoint that answered, or ErrDialFailed after the last
// attempt.
func (m *Userspace) Connect(svc ServicePortName, clientIP string, via EntryKind, dial DialFunc) (Endpoint, error) {
	reset := false
	var lastErr error
	for _, timeout := range EndpointDialTimeouts {
		ep, err := m.NextEndpoint(svc, clientIP, via, reset)
		if err != nil {
			return Endpoint{}, err
		}
		if lastErr = dial(ep, timeout); lastErr == nil {
			return ep, nil
		}
		reset = true
	}
	return Endpoint{}, pickError(svc, fmt.Errorf("%w (last error: %w)", ErrDialFailed, lastErr))
}

// portalRules writes the iptables rules the userspace proxier installs, as
// iptables-save shows them: the proxy listens on 0.0.0.0, so traffic from
// containers is REDIRECTed to the proxy port and traffic from the node
// itself is DNATed to the node's address.
func (m *Userspace) portalRules(names []ServicePortName) ([]byte, int) {
	nat, filter := newIPTable("nat"), newIPTable("filter")
	for _, c := range []string{"PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"} {
		nat.chain(c, true)
	}
	for _, c := range []string{portalsContainerChain, portalsHostChain, nodePortContainerChain, nodePortHostChain} {
		nat.chain(c, false)
	}
	filter.chain("INPUT", true)
	filter.chain(nodePortNonLocalChain, false)

	clusterIPs := "handle ClusterIPs; NOTE: this must be before the NodePort rules"
	nodePorts := "handle service NodePorts; NOTE: this must be the last rule in the chain"
	nat.appendRule("PREROUTING", newRule().comment(clusterIPs).jumpChain(portalsContainerChain))
	nat.appendRule("PREROUTING", newRule().addrTypeDstLocal().comment(nodePorts).jumpChain(nodePortContainerChain))
	nat.appendRule("OUTPUT", newRule().comment(clusterIPs).jumpChain(portalsHostChain))
	nat.appendRule("OUTPUT", newRule().addrTypeDstLocal().comment(nodePorts).jumpChain(nodePortHostChain))
	filter.appendRule("INPUT", newRule().comment("Ensure that non-local NodePort traffic can flow").jumpChain(nodePortNonLocalChain))

	for _, name := range names {
		s := m.services[name]
		spn, proto, info := name.String(), name.protocol(), s.info
		portal := func() *ipRule {
			return newRule().comment(spn).pProto(proto).destPort(info.Port).
				dstAddr(info.ClusterIP.String()+"/32", netip.PrefixFrom(info.ClusterIP, 32), false)
		}
		nat.appendRule(portalsContainerChain, portal().redirectTo(s.proxyPort))
		nat.appendRule(portalsHostChain, portal().dnatToProxy(m.cfg.NodeIP, s.proxyPort))
		if info.NodePort != 0 {
			nodePort := func() *ipRule { return newRule().comment(spn).pProto(proto).destPort(info.NodePort) }
			nat.appendRule(nodePortContainerChain, nodePort().redirectTo(s.proxyPort))
			nat.appendRule(nodePortHostChain, nodePort().dnatToProxy(m.cfg.NodeIP, s.proxyPort))
			filter.appendRule(nodePortNonLocalChain, newRule().comment(spn).pProto(proto).destPort(s.proxyPort).
				comment(spn).state("NEW").verdict(targetAccept, "ACCEPT"))
		}
	}
	var buf bytes.Buffer
	nat.write(&buf)
	filter.write(&buf)
	return buf.Bytes(), nat.lines + filter.lines
}

// Render writes the portal rules as iptables-save shows them; the
// balancing itself happens in the proxy process and leaves no kernel state.
func (m *Userspace) Render(w io.Writer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := w.Write(m.saved); err != nil {
		return fmt.Errorf("render userspace portal rules: %w", err)
	}
	return nil
}

// Cleanup removes the portal rules and forgets every balancer and proxy
// port.
func (m *Userspace) Cleanup() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.services, m.saved, m.rules = nil, nil, 0
}
