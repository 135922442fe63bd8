package proxier

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// Names in upstream's "ip kube-proxy" table. The table is kube-proxy's own,
// so nothing in it needs a "KUBE-" prefix.
const (
	nftTable = "kube-proxy"

	nftServicesChain        = "services"
	nftMarkMasqChain        = "mark-for-masquerade"
	nftMasqueradingChain    = "masquerading"
	nftRejectChain          = "reject-chain"
	nftServiceEndpointsChk  = "service-endpoints-check"
	nftNodePortEndpointsChk = "nodeport-endpoints-check"
	nftFirewallCheckChain   = "firewall-check"
	nftClusterIPsCheckChain = "cluster-ips-check"

	nftClusterPolicyPrefix = "service-"
	nftLocalPolicyPrefix   = "local-"
	nftExternalPrefix      = "external-"
	nftEndpointPrefix      = "endpoint-"
	nftAffinityPrefix      = "affinity-"

	// nftChainNameBaseMax is knftables' 256-character name limit minus the
	// longest prefix kube-proxy puts in front of a base name.
	nftChainNameBaseMax = 256 - 16
)

// hashAndTruncate is upstream's nftables naming: eight base32 characters of
// sha256(name), a dash, then the readable name, so that chains of one
// service that differ in a digit still look different at a glance.
func hashAndTruncate(name string) string {
	sum := sha256.Sum256([]byte(name))
	name = base32.StdEncoding.EncodeToString(sum[:])[:8] + "-" + name
	if len(name) > nftChainNameBaseMax {
		name = name[:nftChainNameBaseMax-3] + "..."
	}
	return name
}

// nftServiceBase is "HASH-namespace/name/protocol/port", e.g.
// "ULMVA6XW-ns1/svc1/tcp/p80".
func nftServiceBase(n ServicePortName) string {
	return hashAndTruncate(n.Namespace + "/" + n.Name + "/" + n.protocol() + "/" + n.Port)
}

// nftEndpointBase is "HASH-namespace/name/protocol/port__ip/port", e.g.
// "5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80".
func nftEndpointBase(n ServicePortName, ep Endpoint) string {
	return hashAndTruncate(n.Namespace + "/" + n.Name + "/" + n.protocol() + "/" + n.Port +
		"__" + ep.IP.String() + "/" + strconv.Itoa(ep.Port))
}

// nftKey is the key of the service-ips and no-endpoint-services maps:
// ipv4_addr . inet_proto . inet_service.
type nftKey struct {
	addr  netip.Addr
	proto string
	port  uint16
}

// nftPortKey is the key of the nodeport maps: inet_proto . inet_service.
type nftPortKey struct {
	proto string
	port  uint16
}

// nftVerdict is a verdict map value: "goto <chain>" or "drop".
type nftVerdict struct {
	chain   *nftChain
	drop    bool
	comment string
}

func (v nftVerdict) String() string {
	if v.drop {
		return "drop"
	}
	return "goto " + v.chain.name
}

// nftAffinitySet is a per-endpoint affinity set: the clients that reached
// the endpoint recently, each expiring timeout after its last connection.
type nftAffinitySet struct {
	name     string
	timeout  time.Duration
	elements map[netip.Addr]time.Time // client -> expiry
}

// nftState is one sync's table: its maps and sets and its chains.
type nftState struct {
	chains   []*nftChain
	byName   map[string]*nftChain
	rules    int
	services map[ServicePortName]*ServiceInfo

	clusterIPs          map[netip.Addr]struct{}
	serviceIPs          map[nftKey]nftVerdict
	serviceNodePorts    map[nftPortKey]nftVerdict
	noEndpointServices  map[nftKey]nftVerdict
	noEndpointNodePorts map[nftPortKey]nftVerdict
	affinitySets        []*nftAffinitySet
}

// chain returns the named chain, creating it if it is new.
func (s *nftState) chain(name string) *nftChain {
	if c, ok := s.byName[name]; ok {
		return c
	}
	c := &nftChain{name: name}
	s.chains = append(s.chains, c)
	s.byName[name] = c
	return c
}

func (s *nftState) add(chain string, r nftRule) {
	c := s.chain(chain)
	c.rules = append(c.rules, r)
	s.rules++
}

// NFTables is kube-proxy's nftables mode: upstream's "ip kube-proxy" table,
// where verdict maps keyed by destination send a packet straight to its
// service's chain. Sync counts chain rules plus the elements of the four
// verdict maps, which stand in for the per-service dispatch rules iptables
// needs.
type NFTables struct {
	cfg      Config
	markBits uint32

	mu       sync.Mutex
	state    *nftState
	affinity map[string]*nftAffinitySet
}

var _ Mode = (*NFTables)(nil)

// NewNFTables returns an nftables mode with an empty table.
func NewNFTables(cfg Config) (*NFTables, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &NFTables{
		cfg:      cfg,
		markBits: uint32(1) << uint(cfg.MasqueradeBit),
		affinity: make(map[string]*nftAffinitySet),
	}, nil
}

// Name returns "nftables".
func (m *NFTables) Name() string { return ModeNFTables }

// Retries is false: the DNAT is done once, for the first packet.
func (m *NFTables) Retries() bool { return false }

// Sync builds the table again. Affinity sets of endpoints that still exist
// keep their elements, as upstream adds them without flushing.
func (m *NFTables) Sync(snap *Snapshot) SyncResult {
	start := time.Now()
	s := &nftState{
		byName:              make(map[string]*nftChain),
		services:            snap.Services,
		clusterIPs:          make(map[netip.Addr]struct{}, len(snap.Services)),
		serviceIPs:          make(map[nftKey]nftVerdict, len(snap.Services)),
		serviceNodePorts:    make(map[nftPortKey]nftVerdict),
		noEndpointServices:  make(map[nftKey]nftVerdict),
		noEndpointNodePorts: make(map[nftPortKey]nftVerdict),
	}
	m.writeBaseChains(s)

	m.mu.Lock()
	defer m.mu.Unlock()
	affinity := make(map[string]*nftAffinitySet)
	for _, name := range snap.ServiceNames() {
		svc := snap.Services[name]
		m.writeService(s, svc, categorize(svc, snap.Endpoints[name]), affinity)
	}
	for _, c := range s.chains {
		for i := range c.rules {
			c.rules[i].link(s)
		}
	}
	m.state, m.affinity = s, affinity
	elements := len(s.serviceIPs) + len(s.serviceNodePorts) + len(s.noEndpointServices) + len(s.noEndpointNodePorts)
	return SyncResult{Duration: time.Since(start), Rules: s.rules + elements}
}

// nftBaseChains are upstream's base chains, hooked into netfilter; their
// header says where and at which priority (before or after DNAT).
var nftBaseChains = []struct{ name, header string }{
	{"filter-prerouting", "type filter hook prerouting priority dstnat - 10; policy accept;"},
	{"filter-input", "type filter hook input priority dstnat - 10; policy accept;"},
	{"filter-forward", "type filter hook forward priority dstnat - 10; policy accept;"},
	{"filter-output", "type filter hook output priority dstnat - 10; policy accept;"},
	{"filter-output-post-dnat", "type filter hook output priority dstnat + 10; policy accept;"},
	{"nat-prerouting", "type nat hook prerouting priority dstnat; policy accept;"},
	{"nat-output", "type nat hook output priority dstnat; policy accept;"},
	{"nat-postrouting", "type nat hook postrouting priority srcnat; policy accept;"},
}

// nftJumps are upstream's nftablesJumpChains: the regular chains each base
// chain jumps to, in order.
var nftJumps = []struct{ to, from, cond string }{
	{nftNodePortEndpointsChk, "filter-input", "ct state new "},
	{nftServiceEndpointsChk, "filter-input", "ct state new "},
	{nftServiceEndpointsChk, "filter-forward", "ct state new "},
	{nftServiceEndpointsChk, "filter-output", "ct state new "},
	{nftFirewallCheckChain, "filter-prerouting", "ct state new "},
	{nftFirewallCheckChain, "filter-output", "ct state new "},
	{nftServicesChain, "nat-output", ""},
	{nftServicesChain, "nat-prerouting", ""},
	{nftMasqueradingChain, "nat-postrouting", ""},
	{nftClusterIPsCheckChain, "filter-forward", "ct state new "},
	{nftClusterIPsCheckChain, "filter-output-post-dnat", "ct state new "},
}

// writeBaseChains writes what setupNFTables writes on a full sync.
func (m *NFTables) writeBaseChains(s *nftState) {
	for _, bc := range nftBaseChains {
		s.chain(bc.name).header = bc.header
	}
	for _, j := range nftJumps {
		s.chain(j.to)
		s.add(j.from, nftRule{kind: nftRuleJump, text: j.cond + "jump " + j.to, targetName: j.to})
	}
	s.chain(nftMarkMasqChain)
	mark := fmt.Sprintf("0x%08x", m.markBits)
	s.add(nftMarkMasqChain, nftRule{kind: nftRuleStatic, text: "meta mark set meta mark | " + mark})
	s.add(nftMasqueradingChain, nftRule{kind: nftRuleStatic, text: "meta mark & " + mark + " == 0x00000000 return"})
	s.add(nftMasqueradingChain, nftRule{kind: nftRuleStatic, text: "meta mark set meta mark ^ " + mark})
	s.add(nftMasqueradingChain, nftRule{kind: nftRuleStatic, text: "masquerade fully-random"})
	s.add(nftClusterIPsCheckChain, nftRule{kind: nftRuleClusterIPsReject,
		text: `ip daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"`})
	s.chain(nftRejectChain).comment = "helper for @no-endpoint-services / @no-endpoint-nodeports"
	s.add(nftRejectChain, nftRule{kind: nftRuleReject, text: "reject"})
	s.add(nftServiceEndpointsChk, nftRule{kind: nftRuleNoEndpointServices,
		text: "ip daddr . meta l4proto . th dport vmap @no-endpoint-services"})
	s.add(nftNodePortEndpointsChk, nftRule{kind: nftRuleNoEndpointNodePorts,
		text: "ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @no-endpoint-nodeports"})
	s.add(nftFirewallCheckChain, nftRule{kind: nftRuleStatic,
		text: "ip daddr . meta l4proto . th dport vmap @firewall-ips"})
	s.add(nftServicesChain, nftRule{kind: nftRuleServiceIPs,
		text: "ip daddr . meta l4proto . th dport vmap @service-ips"})
	s.add(nftServicesChain, nftRule{kind: nftRuleServiceNodePorts,
		text: "fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports"})
}
