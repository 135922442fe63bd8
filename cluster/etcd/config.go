package etcd

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/klab-dev/klab/cluster/etcd/fault"
	"github.com/klab-dev/klab/cluster/internal/componentbase"
)

// Upstream defaults, as etcd ships them.
const (
	DefaultTickInterval     = 100 * time.Millisecond
	DefaultElectionTicks    = 10
	DefaultHeartbeatTicks   = 1
	DefaultSnapshotCount    = 10000
	DefaultSnapshotCatchUp  = 5000
	DefaultMaxRequestBytes  = 1536 * 1024
	DefaultCompactRetention = 10000 // revisions kept by automatic compaction
)

// Peer is one member of the initial cluster.
type Peer struct {
	Name      string `json:"name"`
	PeerURL   string `json:"peerURL"`
	ClientURL string `json:"clientURL"`
}

// Config is everything a member needs to start. Zero values take upstream
// defaults (see Default*).
type Config struct {
	// Name is the member's name, e.g. "master-1"; it is also the name the
	// fault table knows the member by.
	Name string
	// DataDir holds member.db. It is created if missing; a foreign or
	// unreadable one makes the member refuse to start.
	DataDir string
	// ClusterToken is the initial-cluster-token; with InitialCluster it
	// determines the cluster ID, so that two clusters never mix.
	ClusterToken string
	// InitialCluster lists every member the cluster starts with, this one
	// included.
	InitialCluster []Peer
	// Join means the member was added with MemberAdd and joins an existing
	// cluster (initial-cluster-state=existing) instead of bootstrapping.
	Join bool

	// ClientListen and PeerListen are host:port addresses to listen on; the
	// advertised URLs are those of this member's Peer in InitialCluster.
	// DebugListen, if set, serves /debug/klab on its own listener; it is
	// always served on the peer listener too.
	ClientListen string
	PeerListen   string
	DebugListen  string
	// MetricsListen, if set, serves GET /health in plain HTTP, as etcd's
	// --listen-metrics-urls: what a kubelet probes when the other ports
	// require an etcd client certificate.
	MetricsListen string

	// ClientTLS, when set, serves the client port over TLS: etcd's
	// --cert-file, --key-file and, with ClientAuth set to require and
	// verify, --client-cert-auth with --trusted-ca-file. PeerTLS does the
	// same for the peer port and DebugListen (--peer-cert-file, ...), and
	// PeerClientTLS is what the member presents and trusts when it dials
	// its peers: raft streams, snapshots, lease forwarding. Peer URLs
	// are https:// exactly when PeerTLS is set. See pki.EtcdServerTLS.
	ClientTLS     *tls.Config
	PeerTLS       *tls.Config
	PeerClientTLS *tls.Config

	TickInterval   time.Duration
	ElectionTicks  int
	HeartbeatTicks int
	// NoInitialElectionTickAdvance turns off what etcd's
	// --initial-election-tick-advance (on by default) does: at start, once
	// the peers' streams are up, fast-forward the election ticks so that a
	// cluster without a leader elects one after a fraction of an election
	// timeout instead of a whole one (see adjustTicks).
	NoInitialElectionTickAdvance bool
	// SnapshotCount is how many applied entries trigger a raft snapshot and
	// log compaction; SnapshotCatchUp entries are kept after it for slow
	// followers.
	SnapshotCount   uint64
	SnapshotCatchUp uint64
	// CompactRetention is how many revisions automatic MVCC compaction keeps
	// (0 takes the default, negative disables it).
	CompactRetention int64
	// NoFsync turns fsync off for demos. It is unsafe on power loss and the
	// member says so in its log and status.
	NoFsync bool
	// MaxRequestBytes caps one client request.
	MaxRequestBytes int
	// QuotaBackendBytes is the space quota of the member's database, as
	// etcd's --quota-backend-bytes: 0 takes etcd's default (2 GiB), a
	// negative value disables it. See quota.go.
	QuotaBackendBytes int64

	// Faults is the network-fault layer consulted for every raft message;
	// nil means a healthy network.
	Faults *fault.Table
	// Logger receives the member's log; nil discards it.
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.TickInterval == 0 {
		c.TickInterval = DefaultTickInterval
	}
	if c.ElectionTicks == 0 {
		c.ElectionTicks = DefaultElectionTicks
	}
	if c.HeartbeatTicks == 0 {
		c.HeartbeatTicks = DefaultHeartbeatTicks
	}
	if c.SnapshotCount == 0 {
		c.SnapshotCount = DefaultSnapshotCount
	}
	if c.SnapshotCatchUp == 0 {
		c.SnapshotCatchUp = DefaultSnapshotCatchUp
	}
	if c.CompactRetention == 0 {
		c.CompactRetention = DefaultCompactRetention
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.QuotaBackendBytes == 0 {
		c.QuotaBackendBytes = DefaultQuotaBackendBytes
	}
	c.Logger = componentbase.Logger(c.Logger)
}

// Validate reports the first problem with the configuration, naming the field.
func (c *Config) Validate() error {
	if c.Name == "" {
		return fmt.Errorf("etcd config: name is empty")
	}
	if c.DataDir == "" {
		return fmt.Errorf("etcd config: member %s: data dir is empty", c.Name)
	}
	if c.ClientListen == "" || c.PeerListen == "" {
		return fmt.Errorf("etcd config: member %s: client and peer listen addresses are required", c.Name)
	}
	if _, ok := c.self(); !ok {
		return fmt.Errorf("etcd config: member %s is not in the initial cluster %s", c.Name, c.initialClusterString())
	}
	seen := map[string]bool{}
	for _, p := range c.InitialCluster {
		if seen[p.Name] {
			return fmt.Errorf("etcd config: initial cluster names member %s twice", p.Name)
		}
		seen[p.Name] = true
		if scheme := c.peerScheme(); !strings.HasPrefix(p.PeerURL, scheme) {
			return fmt.Errorf("etcd config: member %s: peer URL %q must start with %s (peer TLS is %s)", p.Name, p.PeerURL, scheme, onOff(c.PeerTLS != nil))
		}
	}
	if (c.PeerTLS == nil) != (c.PeerClientTLS == nil) {
		return fmt.Errorf("etcd config: member %s: peer TLS needs both a serving and a dialing configuration", c.Name)
	}
	if self, _ := c.self(); self.ClientURL != "" {
		if scheme := c.clientScheme(); !strings.HasPrefix(self.ClientURL, scheme) {
			return fmt.Errorf("etcd config: member %s: client URL %q must start with %s (client TLS is %s)", c.Name, self.ClientURL, scheme, onOff(c.ClientTLS != nil))
		}
	}
	if c.HeartbeatTicks <= 0 || c.ElectionTicks <= c.HeartbeatTicks {
		return fmt.Errorf("etcd config: member %s: election ticks (%d) must be greater than heartbeat ticks (%d)", c.Name, c.ElectionTicks, c.HeartbeatTicks)
	}
	return nil
}

func (c *Config) peerScheme() string {
	if c.PeerTLS != nil {
		return "https://"
	}
	return "http://"
}

func (c *Config) clientScheme() string {
	if c.ClientTLS != nil {
		return "https://"
	}
	return "http://"
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func (c *Config) self() (Peer, bool) {
	for _, p := range c.InitialCluster {
		if p.Name == c.Name {
			return p, true
		}
	}
	return Peer{}, false
}

func (c *Config) initialClusterString() string {
	parts := make([]string, 0, len(c.InitialCluster))
	for _, p := range c.InitialCluster {
		parts = append(parts, p.Name+"="+p.PeerURL)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// MemberID derives a member's ID from its peer URL and the cluster token, as
// etcd derives it from the peer URLs, the cluster token and the time (no time
// here: a restarted lab must get the same IDs).
func MemberID(peerURL, token string) uint64 {
	sum := sha256.Sum256([]byte(peerURL + "\x00" + token))
	id := binary.BigEndian.Uint64(sum[:8])
	if id == 0 {
		id = 1
	}
	return id
}

// ClusterID derives the cluster ID from the IDs of the initial members and
// the token. Members refuse raft messages carrying another cluster's ID.
func ClusterID(peers []Peer, token string) uint64 {
	ids := make([]uint64, 0, len(peers))
	for _, p := range peers {
		ids = append(ids, MemberID(p.PeerURL, token))
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	h := sha256.New()
	for _, id := range ids {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], id)
		h.Write(b[:])
	}
	h.Write([]byte(token))
	return binary.BigEndian.Uint64(h.Sum(nil)[:8])
}
