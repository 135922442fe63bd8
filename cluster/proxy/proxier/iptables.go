package proxier

import (
	"bytes"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"
)

// Chain names and prefixes of upstream's iptables proxier.
const (
	kubeServicesChain         = "KUBE-SERVICES"
	kubeExternalServicesChain = "KUBE-EXTERNAL-SERVICES"
	kubeNodePortsChain        = "KUBE-NODEPORTS"
	kubePostroutingChain      = "KUBE-POSTROUTING"
	kubeMarkMasqChain         = "KUBE-MARK-MASQ"
	kubeForwardChain          = "KUBE-FORWARD"
	kubeProxyFirewallChain    = "KUBE-PROXY-FIREWALL"

	clusterPolicyChainPrefix = "KUBE-SVC-"
	localPolicyChainPrefix   = "KUBE-SVL-"
	externalChainPrefix      = "KUBE-EXT-"
	endpointChainPrefix      = "KUBE-SEP-"

	// largeClusterEndpointsThreshold is upstream's: above this many
	// endpoints, kube-proxy stops writing comments on the per-endpoint
	// rules to keep the ruleset small.
	largeClusterEndpointsThreshold = 1000
)

// portProtoHash is upstream's chain-name hash: the first 16 characters of the
// base32 encoding of sha256("namespace/name:port" + protocol). 16 characters
// keep chain names within iptables' 28-character limit.
func portProtoHash(servicePortName, protocol string) string {
	sum := sha256.Sum256([]byte(servicePortName + protocol))
	return base32.StdEncoding.EncodeToString(sum[:])[:16]
}

// endpointChainName is KUBE-SEP-<hash of port name, protocol and "ip:port">.
func endpointChainName(servicePortName, protocol, endpoint string) string {
	return endpointChainPrefix + portProtoHash(servicePortName, protocol+endpoint)
}

// probability is 1/n as kube-proxy prints it, with ten decimals.
func probability(n int) string {
	return strconv.FormatFloat(1.0/float64(n), 'f', 10, 64)
}

// IPTables is kube-proxy's iptables mode: rules in the nat and filter tables
// that netfilter evaluates one after the other for the first packet of every
// connection. Sync counts every "-A" line of both tables.
type IPTables struct {
	cfg      Config
	mark     string
	markBits uint32

	mu       sync.Mutex
	services map[ServicePortName]*ServiceInfo
	nat      *ipTable
	filter   *ipTable
	saved    []byte
	recent   recentLists
}

var _ Mode = (*IPTables)(nil)

// NewIPTables returns an iptables mode with no rules yet.
func NewIPTables(cfg Config) (*IPTables, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &IPTables{
		cfg:      cfg,
		mark:     cfg.masqueradeMark(),
		markBits: uint32(1) << uint(cfg.MasqueradeBit),
		recent:   make(recentLists),
	}, nil
}

// Name returns "iptables".
func (m *IPTables) Name() string { return ModeIPTables }

// Retries is false: a connection DNATed to a dead endpoint fails.
func (m *IPTables) Retries() bool { return false }

// Sync writes the whole ruleset again, as a full kube-proxy sync does, and
// keeps the iptables-save text of it. The xt_recent lists that implement
// session affinity survive, as they do in the kernel.
func (m *IPTables) Sync(snap *Snapshot) SyncResult {
	start := time.Now()
	filter, nat := newIPTable("filter"), newIPTable("nat")
	m.writeBaseRules(filter, nat)

	total := 0
	for name := range snap.Services {
		total += len(snap.Endpoints[name])
	}
	large := total > largeClusterEndpointsThreshold
	for _, name := range snap.ServiceNames() {
		svc := snap.Services[name]
		m.writeServiceRules(filter, nat, svc, categorize(svc, snap.Endpoints[name]), large)
	}

	// The NodePort dispatch must be the last rule of KUBE-SERVICES. With
	// upstream's default localhostNodePorts: true it matches every local
	// address, loopback included (only localhostNodePorts: false adds
	// "! -d 127.0.0.0/8").
	nat.appendRule(kubeServicesChain, newRule().
		comment("kubernetes service nodeports; NOTE: this must be the last rule in this chain").
		addrTypeDstLocal().
		jumpChain(kubeNodePortsChain))
	filter.appendRule(kubeForwardChain, newRule().conntrack("INVALID").verdict(targetDrop, "DROP"))
	filter.appendRule(kubeForwardChain, newRule().comment("kubernetes forwarding rules").
		markMatch(m.mark, m.markBits, false).verdict(targetAccept, "ACCEPT"))
	filter.appendRule(kubeForwardChain, newRule().comment("kubernetes forwarding conntrack rule").
		conntrack("RELATED,ESTABLISHED").verdict(targetAccept, "ACCEPT"))

	filter.link()
	nat.link()
	var buf bytes.Buffer
	filter.write(&buf)
	nat.write(&buf)

	m.mu.Lock()
	defer m.mu.Unlock()
	m.services = snap.Services
	m.filter, m.nat, m.saved = filter, nat, buf.Bytes()
	return SyncResult{Duration: time.Since(start), Rules: filter.lines + nat.lines}
}

// jumpRule is one rule kube-proxy ensures in a built-in chain.
type jumpRule struct {
	table, from, to, comment string
	newOnly                  bool
}

// builtinJumps are upstream's iptablesJumpChains. kube-proxy prepends each
// one (iptables -I), so a built-in chain lists them in reverse order.
var builtinJumps = []jumpRule{
	{"filter", "INPUT", kubeExternalServicesChain, "kubernetes externally-visible service portals", true},
	{"filter", "FORWARD", kubeExternalServicesChain, "kubernetes externally-visible service portals", true},
	{"filter", "INPUT", kubeNodePortsChain, "kubernetes health check service ports", false},
	{"filter", "FORWARD", kubeServicesChain, "kubernetes service portals", true},
	{"filter", "OUTPUT", kubeServicesChain, "kubernetes service portals", true},
	{"filter", "FORWARD", kubeForwardChain, "kubernetes forwarding rules", false},
	{"filter", "INPUT", kubeProxyFirewallChain, "kubernetes load balancer firewall", true},
	{"filter", "OUTPUT", kubeProxyFirewallChain, "kubernetes load balancer firewall", true},
	{"filter", "FORWARD", kubeProxyFirewallChain, "kubernetes load balancer firewall", true},
	{"nat", "OUTPUT", kubeServicesChain, "kubernetes service portals", false},
	{"nat", "PREROUTING", kubeServicesChain, "kubernetes service portals", false},
	{"nat", "POSTROUTING", kubePostroutingChain, "kubernetes postrouting rules", false},
}

// writeBaseRules declares the chains every sync writes and the rules that do
// not depend on services.
func (m *IPTables) writeBaseRules(filter, nat *ipTable) {
	for _, c := range []string{"INPUT", "FORWARD", "OUTPUT"} {
		filter.chain(c, true)
	}
	for _, c := range []string{"PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"} {
		nat.chain(c, true)
	}
	for _, c := range []string{kubeServicesChain, kubeExternalServicesChain, kubeForwardChain, kubeNodePortsChain, kubeProxyFirewallChain} {
		filter.chain(c, false)
	}
	for _, c := range []string{kubeServicesChain, kubeNodePortsChain, kubePostroutingChain, kubeMarkMasqChain} {
		nat.chain(c, false)
	}
	for i := len(builtinJumps) - 1; i >= 0; i-- {
		j := builtinJumps[i]
		r := newRule()
		if j.newOnly {
			r.conntrack("NEW")
		}
		table := filter
		if j.table == "nat" {
			table = nat
		}
		table.appendRule(j.from, r.comment(j.comment).jumpChain(j.to))
	}

	nat.appendRule(kubePostroutingChain, newRule().markMatch(m.mark, m.markBits, true).verdict(targetReturn, "RETURN"))
	nat.appendRule(kubePostroutingChain, newRule().xorMark(m.mark, m.markBits))
	nat.appendRule(kubePostroutingChain, newRule().comment("kubernetes service traffic requiring SNAT").masquerade())
	nat.appendRule(kubeMarkMasqChain, newRule().orMark(m.mark, m.markBits))
}

// Pick sends the first packet of a connection through the rules, from nat
// PREROUTING, walking KUBE-SERVICES rule by rule. If no rule DNATs it, the
// filter table decides how it fails: REJECT (no endpoints) or DROP (no local
// endpoints).
func (m *IPTables) Pick(svc ServicePortName, clientIP string, via EntryKind, rng *rand.Rand) (Endpoint, error) {
	src, err := parseClientIP(clientIP)
	if err != nil {
		return Endpoint{}, pickError(svc, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	info, ok := m.services[svc]
	if !ok || m.nat == nil {
		return Endpoint{}, pickError(svc, ErrServiceNotFound)
	}
	pkt := ipPacket{src: src, dst: info.ClusterIP, proto: svc.protocol(), dport: info.Port}
	pkt.srcLocal = src == m.cfg.NodeIP || src.IsLoopback()
	filterChain := "FORWARD"
	if via == ViaNodePort {
		if info.NodePort == 0 {
			return Endpoint{}, pickError(svc, ErrNoNodePort)
		}
		pkt.dst, pkt.dport, pkt.dstLocal = m.cfg.NodeIP, info.NodePort, true
		filterChain = "INPUT"
	}

	pkt.srcV, pkt.dstV = addrValue(pkt.src), addrValue(pkt.dst)
	ev := &ipEval{pkt: pkt, now: m.cfg.Now(), rng: rng, recent: m.recent}
	if v, done := ev.run(m.nat.byName["PREROUTING"]); done && v.target == targetDNAT {
		return v.rule.dnat, nil
	}
	v, _ := ev.run(m.filter.byName[filterChain])
	switch v.target {
	case targetReject:
		return Endpoint{}, pickError(svc, ErrNoEndpoints)
	case targetDrop:
		return Endpoint{}, pickError(svc, ErrNoLocalEndpoints)
	}
	return Endpoint{}, pickError(svc, ErrServiceNotFound)
}

// Render writes the tables as iptables-save shows them on the node: the
// built-in chains with the jumps kube-proxy ensures into its own chains, then
// kube-proxy's chains and rules, with the arguments in the order kube-proxy
// writes them (a real iptables-save normalizes that order and prints the
// probabilities with the kernel's 2^-31 resolution, 0.33333333349).
func (m *IPTables) Render(w io.Writer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := w.Write(m.saved); err != nil {
		return fmt.Errorf("render iptables rules: %w", err)
	}
	return nil
}

// Cleanup removes every chain and rule and forgets the affinity lists.
func (m *IPTables) Cleanup() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.services, m.nat, m.filter, m.saved = nil, nil, nil, nil
	m.recent = make(recentLists)
}
