package proxier

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Mode names, as they appear in the "mode:" field of the kube-proxy ConfigMap.
const (
	ModeUserspace = "userspace"
	ModeIPTables  = "iptables"
	ModeIPVS      = "ipvs"
	ModeNFTables  = "nftables"
)

// ModeNames lists every mode New accepts, in the order the curriculum
// introduces them.
var ModeNames = []string{ModeUserspace, ModeIPTables, ModeIPVS, ModeNFTables}

// Errors Pick returns, wrapped with the service they concern. Test them with
// errors.Is.
var (
	// ErrServiceNotFound means the mode has no rule for this service port:
	// the service does not exist, is headless, or was never synced.
	ErrServiceNotFound = errors.New("no proxy rules for this service port")
	// ErrNoNodePort means the connection came in through a NodePort but the
	// service has none.
	ErrNoNodePort = errors.New("service has no NodePort")
	// ErrNoEndpoints means the service has no usable endpoint anywhere in the
	// cluster. iptables and nftables REJECT such connections (the client sees
	// "connection refused"); ipvs answers with ICMP port unreachable.
	ErrNoEndpoints = errors.New("service has no endpoints")
	// ErrNoLocalEndpoints means the traffic policy that applies is Local and
	// this node runs no usable endpoint. iptables and nftables DROP such
	// connections (the client times out).
	ErrNoLocalEndpoints = errors.New("service has no local endpoints")
	// ErrInvalidClientIP means Pick was given a client address that is not
	// an IPv4 address.
	ErrInvalidClientIP = errors.New("client IP is not an IPv4 address")
)

// ServicePortName identifies one port of one Service, as upstream's
// proxy.ServicePortName does. Its String form, "namespace/name:port", is the
// input of the iptables chain hashes and the comment on every rule.
type ServicePortName struct {
	types.NamespacedName
	// Port is the port's name; it is empty for a Service with a single
	// unnamed port.
	Port     string
	Protocol corev1.Protocol
}

// String returns "namespace/name:port", or "namespace/name" when the port has
// no name.
func (n ServicePortName) String() string {
	if n.Port == "" {
		return n.NamespacedName.String()
	}
	return n.NamespacedName.String() + ":" + n.Port
}

// protocol returns the protocol in the lower case every rule syntax uses.
func (n ServicePortName) protocol() string {
	switch n.Protocol {
	case corev1.ProtocolTCP:
		return "tcp"
	case corev1.ProtocolUDP:
		return "udp"
	case corev1.ProtocolSCTP:
		return "sctp"
	}
	return strings.ToLower(string(n.Protocol))
}

// less orders service ports by namespace, name, port name and protocol, the
// order in which every mode writes its rules.
func (n ServicePortName) less(o ServicePortName) bool {
	if n.Namespace != o.Namespace {
		return n.Namespace < o.Namespace
	}
	if n.Name != o.Name {
		return n.Name < o.Name
	}
	if n.Port != o.Port {
		return n.Port < o.Port
	}
	return n.Protocol < o.Protocol
}

// ServiceInfo is what the proxy keeps about one service port (upstream's
// BaseServicePortInfo, reduced to what klab's services use: ClusterIP and
// NodePort; external IPs and load balancers are not proxied).
type ServiceInfo struct {
	Name      ServicePortName
	ClusterIP netip.Addr
	Port      int
	// NodePort is zero unless the Service is of type NodePort or
	// LoadBalancer.
	NodePort int
	// SessionAffinity is ClientIP or None; with ClientIP, a client keeps
	// reaching the same endpoint until it has been idle for
	// StickyMaxAgeSeconds.
	SessionAffinity     corev1.ServiceAffinity
	StickyMaxAgeSeconds int
	// InternalPolicyLocal is internalTrafficPolicy: Local (ClusterIP traffic
	// only reaches endpoints on this node).
	InternalPolicyLocal bool
	// ExternalPolicyLocal is externalTrafficPolicy: Local on a NodePort or
	// LoadBalancer Service (NodePort traffic from outside only reaches
	// endpoints on this node).
	ExternalPolicyLocal bool
}

// ExternallyAccessible reports whether the service port can be reached other
// than through its ClusterIP.
func (s *ServiceInfo) ExternallyAccessible() bool { return s.NodePort != 0 }

// UsesClusterEndpoints reports whether some traffic to this port follows the
// Cluster policy. Even with externalTrafficPolicy Local, traffic from pods and
// from the node itself to a NodePort is short-circuited to all endpoints.
func (s *ServiceInfo) UsesClusterEndpoints() bool {
	return !s.InternalPolicyLocal || s.ExternallyAccessible()
}

// UsesLocalEndpoints reports whether some traffic to this port follows the
// Local policy.
func (s *ServiceInfo) UsesLocalEndpoints() bool {
	return s.InternalPolicyLocal || (s.ExternalPolicyLocal && s.ExternallyAccessible())
}

// Endpoint is one backend of one service port, from an EndpointSlice.
type Endpoint struct {
	IP   netip.Addr
	Port int
	// NodeName is the node the endpoint runs on, empty if the slice did not
	// say; Pod is the name of the Pod behind it, empty if not a Pod.
	NodeName string
	Pod      string
	// IsLocal is true when NodeName is the node this proxy runs on.
	IsLocal bool
	// Ready, Serving and Terminating are the EndpointSlice conditions, with
	// the API's defaults applied (nil Ready and Serving mean true, nil
	// Terminating means false).
	Ready       bool
	Serving     bool
	Terminating bool
}

// String returns "ip:port", the form used in rules and chain hashes.
func (e Endpoint) String() string {
	return e.IP.String() + ":" + strconv.Itoa(e.Port)
}

// addrPort returns the endpoint as a netip.AddrPort.
func (e Endpoint) addrPort() netip.AddrPort {
	return netip.AddrPortFrom(e.IP, uint16(e.Port))
}

// EntryKind says how a connection reached the proxy.
type EntryKind int

const (
	// ViaClusterIP is a connection to the service's ClusterIP and port,
	// subject to internalTrafficPolicy.
	ViaClusterIP EntryKind = iota
	// ViaNodePort is a connection to this node's IP and the service's
	// NodePort, subject to externalTrafficPolicy.
	ViaNodePort
)

// String returns "clusterIP" or "nodePort".
func (k EntryKind) String() string {
	if k == ViaNodePort {
		return "nodePort"
	}
	return "clusterIP"
}

// SyncResult is what one Sync did.
type SyncResult struct {
	// Duration is how long rebuilding the mode's state took.
	Duration time.Duration
	// Rules is how many rules the mode programmed; each mode's doc comment
	// says what it counts.
	Rules int
}

// Mode is one kube-proxy mode. All methods are safe for concurrent use; Pick
// may run while Sync replaces the rules.
type Mode interface {
	// Name returns the mode's name as the ConfigMap spells it.
	Name() string
	// Sync rebuilds everything the mode programs from the snapshot. State
	// that survives a resync on a real node (round-robin positions,
	// connection counts, session affinity) survives it here too. The mode
	// keeps pointers into the snapshot: do not modify it afterwards, build a
	// new one.
	Sync(snap *Snapshot) SyncResult
	// Pick returns the endpoint one new connection from clientIP (an IPv4
	// address), arriving via the given entry, reaches by the mode's own
	// selection rules, and records what the mode remembers about it
	// (round-robin position, session affinity). rng supplies the randomness
	// the kernel would draw; nil uses the process-wide generator. Errors wrap
	// ErrServiceNotFound, ErrNoNodePort, ErrNoEndpoints, ErrNoLocalEndpoints
	// or ErrInvalidClientIP.
	Pick(svc ServicePortName, clientIP string, via EntryKind, rng *rand.Rand) (Endpoint, error)
	// Retries reports whether the mode tries another endpoint when the
	// connection to the chosen one fails. Only userspace does.
	Retries() bool
	// Render writes what the mode would program, in the format of the real
	// tool (iptables-save, ipvsadm -Ln, nft list ruleset).
	Render(w io.Writer) error
	// Cleanup removes every rule and all state, as switching modes does.
	Cleanup()
}

// ConnectionTracker is implemented by modes whose choice depends on how many
// connections each endpoint holds (ipvs: lc, sed, nq). The caller reports a
// connection it opened to an endpoint Pick returned, and its end.
type ConnectionTracker interface {
	Connected(svc ServicePortName, via EntryKind, ep Endpoint)
	Disconnected(svc ServicePortName, via EntryKind, ep Endpoint)
}

// Config is what every mode needs to know about the node it runs on.
type Config struct {
	// NodeIP is this node's IPv4 address: the destination of NodePort
	// traffic, and the address userspace portals DNAT to.
	NodeIP netip.Addr
	// ClusterCIDR is the pod network. When set, traffic from it counts as
	// local (upstream's --detect-local-mode=ClusterCIDR): it is not
	// masqueraded and reaches NodePorts with externalTrafficPolicy Local
	// through all endpoints. The zero value disables the detector.
	ClusterCIDR netip.Prefix
	// MasqueradeBit is the fwmark bit used to mark traffic for SNAT;
	// zero means upstream's default, 14.
	MasqueradeBit int
	// IPVSScheduler is the default ipvs scheduler (--ipvs-scheduler): rr,
	// lc, dh, sh, sed or nq; empty means rr.
	IPVSScheduler string
	// UserspacePortBase is the first port userspace proxy sockets are given
	// (--proxy-port-range); zero means 36000.
	UserspacePortBase int
	// Now is the clock for session affinity timeouts; nil means time.Now.
	Now func() time.Time
}

const (
	defaultMasqueradeBit     = 14
	defaultUserspacePortBase = 36000
	// defaultStickyMaxAgeSeconds is v1.DefaultClientIPServiceAffinitySeconds.
	defaultStickyMaxAgeSeconds = 10800
)

// withDefaults checks the config and fills in the defaults.
func (c Config) withDefaults() (Config, error) {
	if !c.NodeIP.IsValid() || !c.NodeIP.Is4() {
		return c, fmt.Errorf("proxier config: NodeIP %q is not an IPv4 address", c.NodeIP)
	}
	if c.ClusterCIDR.IsValid() && !c.ClusterCIDR.Addr().Is4() {
		return c, fmt.Errorf("proxier config: ClusterCIDR %s is not an IPv4 network", c.ClusterCIDR)
	}
	if c.ClusterCIDR.IsValid() {
		c.ClusterCIDR = c.ClusterCIDR.Masked()
	}
	if c.MasqueradeBit == 0 {
		c.MasqueradeBit = defaultMasqueradeBit
	}
	if c.MasqueradeBit < 0 || c.MasqueradeBit > 31 {
		return c, fmt.Errorf("proxier config: MasqueradeBit %d is outside 0..31", c.MasqueradeBit)
	}
	if c.IPVSScheduler == "" {
		c.IPVSScheduler = SchedulerRoundRobin
	}
	if _, err := newScheduler(c.IPVSScheduler); err != nil {
		return c, fmt.Errorf("proxier config: %w", err)
	}
	if c.UserspacePortBase == 0 {
		c.UserspacePortBase = defaultUserspacePortBase
	}
	if c.UserspacePortBase < 1 || c.UserspacePortBase > 65535 {
		return c, fmt.Errorf("proxier config: UserspacePortBase %d is outside 1..65535", c.UserspacePortBase)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}

// masqueradeMark is the mark kube-proxy sets on traffic to masquerade,
// formatted as upstream formats it.
func (c Config) masqueradeMark() string {
	return fmt.Sprintf("%#08x", uint32(1)<<uint(c.MasqueradeBit))
}

// New returns the mode with the given name. An empty name means iptables,
// kube-proxy's default on Linux.
func New(name string, cfg Config) (Mode, error) {
	switch name {
	case ModeUserspace:
		return NewUserspace(cfg)
	case ModeIPTables, "":
		return NewIPTables(cfg)
	case ModeIPVS:
		return NewIPVS(cfg)
	case ModeNFTables:
		return NewNFTables(cfg)
	}
	return nil, fmt.Errorf("unknown kube-proxy mode %q: use one of %s", name, strings.Join(ModeNames, ", "))
}

// parseClientIP parses the client address Pick is given.
func parseClientIP(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return netip.Addr{}, fmt.Errorf("%q: %w", s, ErrInvalidClientIP)
	}
	return a, nil
}

// random32 draws the 32 random bits the kernel's get_random_u32 would; a nil
// rng uses the process-wide generator.
func random32(rng *rand.Rand) uint32 {
	if rng == nil {
		return rand.Uint32()
	}
	return rng.Uint32()
}

// pickError wraps a Pick error with the service it concerns.
func pickError(svc ServicePortName, err error) error {
	return fmt.Errorf("service %s: %w", svc, err)
}
