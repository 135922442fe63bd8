package runtime

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/etcd"
)

// The flags of `klab component etcd`, the command a runtime runs when a
// member lives in its own process (a Docker container, a crash test). Names
// follow etcd's own flags where klab means the same thing; --listen-client
// and --listen-peer take host:port rather than URLs because a member listens
// on exactly one address of each kind.
const (
	flagName               = "name"
	flagDataDir            = "data-dir"
	flagInitialCluster     = "initial-cluster"
	flagInitialClients     = "initial-cluster-client-urls"
	flagInitialToken       = "initial-cluster-token"
	flagInitialState       = "initial-cluster-state"
	flagListenClient       = "listen-client"
	flagListenPeer         = "listen-peer"
	flagListenDebug        = "listen-debug"
	flagHeartbeatInterval  = "heartbeat-interval"
	flagElectionTimeout    = "election-timeout"
	flagSnapshotCount      = "snapshot-count"
	flagNoFsync            = "unsafe-no-fsync"
	flagMaxRequestBytes    = "max-request-bytes"
	flagAdvertiseClientURL = "advertise-client-urls"
)

// EtcdFlags defines the flags of `klab component etcd` on fs and returns a
// function that, once fs is parsed, builds the member's Config from them.
func EtcdFlags(fs *pflag.FlagSet) func() (etcd.Config, error) {
	var (
		name, dataDir, initialCluster, initialClients, token, state string
		listenClient, listenPeer, listenDebug, advertiseClient      string
		heartbeatMS, electionMS                                     int
		snapshotCount                                               uint64
		noFsync                                                     bool
		maxRequestBytes                                             int
	)
	fs.StringVar(&name, flagName, "", i18n.T("component.etcd.flag.name"))
	fs.StringVar(&dataDir, flagDataDir, "", i18n.T("component.etcd.flag.data-dir"))
	fs.StringVar(&initialCluster, flagInitialCluster, "", i18n.T("component.etcd.flag.initial-cluster"))
	fs.StringVar(&initialClients, flagInitialClients, "", i18n.T("component.etcd.flag.initial-cluster-client-urls"))
	fs.StringVar(&token, flagInitialToken, "etcd-cluster", i18n.T("component.etcd.flag.initial-cluster-token"))
	fs.StringVar(&state, flagInitialState, "new", i18n.T("component.etcd.flag.initial-cluster-state"))
	fs.StringVar(&listenClient, flagListenClient, "", i18n.T("component.etcd.flag.listen-client"))
	fs.StringVar(&listenPeer, flagListenPeer, "", i18n.T("component.etcd.flag.listen-peer"))
	fs.StringVar(&listenDebug, flagListenDebug, "", i18n.T("component.etcd.flag.listen-debug"))
	fs.StringVar(&advertiseClient, flagAdvertiseClientURL, "", i18n.T("component.etcd.flag.advertise-client-urls"))
	fs.IntVar(&heartbeatMS, flagHeartbeatInterval, int(etcd.DefaultTickInterval/time.Millisecond), i18n.T("component.etcd.flag.heartbeat-interval"))
	fs.IntVar(&electionMS, flagElectionTimeout, int(etcd.DefaultElectionTicks*etcd.DefaultTickInterval/time.Millisecond), i18n.T("component.etcd.flag.election-timeout"))
	fs.Uint64Var(&snapshotCount, flagSnapshotCount, etcd.DefaultSnapshotCount, i18n.T("component.etcd.flag.snapshot-count"))
	fs.BoolVar(&noFsync, flagNoFsync, false, i18n.T("component.etcd.flag.unsafe-no-fsync"))
	fs.IntVar(&maxRequestBytes, flagMaxRequestBytes, etcd.DefaultMaxRequestBytes, i18n.T("component.etcd.flag.max-request-bytes"))

	return func() (etcd.Config, error) {
		for _, req := range []struct{ flag, value string }{
			{flagName, name}, {flagDataDir, dataDir}, {flagInitialCluster, initialCluster},
			{flagListenClient, listenClient}, {flagListenPeer, listenPeer},
		} {
			if req.value == "" {
				return etcd.Config{}, i18n.NewError("component.etcd.err.required", req.flag)
			}
		}
		peers, err := parseInitialCluster(initialCluster)
		if err != nil {
			return etcd.Config{}, i18n.Wrap(err, "component.etcd.err.flag", flagInitialCluster)
		}
		clients := map[string]string{}
		if initialClients != "" {
			if clients, err = parseNameURLs(initialClients); err != nil {
				return etcd.Config{}, i18n.Wrap(err, "component.etcd.err.flag", flagInitialClients)
			}
		}
		if advertiseClient == "" {
			advertiseClient = "http://" + listenClient
		}
		clients[name] = advertiseClient
		for i := range peers {
			peers[i].ClientURL = clients[peers[i].Name]
		}
		if state != "new" && state != "existing" {
			return etcd.Config{}, i18n.NewError("component.etcd.err.state", flagInitialState, state)
		}
		// etcd counts its election timeout in heartbeat ticks, and so do we.
		if heartbeatMS <= 0 || electionMS < 5*heartbeatMS {
			return etcd.Config{}, i18n.NewError("component.etcd.err.timeouts", flagElectionTimeout, electionMS, flagHeartbeatInterval, heartbeatMS)
		}
		return etcd.Config{
			Name:            name,
			DataDir:         dataDir,
			ClusterToken:    token,
			InitialCluster:  peers,
			Join:            state == "existing",
			ClientListen:    listenClient,
			PeerListen:      listenPeer,
			DebugListen:     listenDebug,
			TickInterval:    time.Duration(heartbeatMS) * time.Millisecond,
			HeartbeatTicks:  1,
			ElectionTicks:   electionMS / heartbeatMS,
			SnapshotCount:   snapshotCount,
			NoFsync:         noFsync,
			MaxRequestBytes: maxRequestBytes,
		}, nil
	}
}

// EtcdArgs renders cfg as the flags EtcdFlags reads, so that a runtime can
// start a member in another process with the configuration it would have
// used in-process.
func EtcdArgs(cfg etcd.Config) []string {
	tick := cfg.TickInterval
	if tick == 0 {
		tick = etcd.DefaultTickInterval
	}
	electionTicks := cfg.ElectionTicks
	if electionTicks == 0 {
		electionTicks = etcd.DefaultElectionTicks
	}
	peers := make([]string, 0, len(cfg.InitialCluster))
	clients := make([]string, 0, len(cfg.InitialCluster))
	advertise := ""
	for _, p := range cfg.InitialCluster {
		peers = append(peers, p.Name+"="+p.PeerURL)
		if p.Name == cfg.Name {
			advertise = p.ClientURL
		} else if p.ClientURL != "" {
			clients = append(clients, p.Name+"="+p.ClientURL)
		}
	}
	state := "new"
	if cfg.Join {
		state = "existing"
	}
	args := []string{
		"--" + flagName + "=" + cfg.Name,
		"--" + flagDataDir + "=" + cfg.DataDir,
		"--" + flagInitialCluster + "=" + strings.Join(peers, ","),
		"--" + flagInitialToken + "=" + cfg.ClusterToken,
		"--" + flagInitialState + "=" + state,
		"--" + flagListenClient + "=" + cfg.ClientListen,
		"--" + flagListenPeer + "=" + cfg.PeerListen,
		"--" + flagHeartbeatInterval + "=" + strconv.FormatInt(tick.Milliseconds(), 10),
		"--" + flagElectionTimeout + "=" + strconv.FormatInt(tick.Milliseconds()*int64(electionTicks), 10),
	}
	if len(clients) > 0 {
		args = append(args, "--"+flagInitialClients+"="+strings.Join(clients, ","))
	}
	if advertise != "" {
		args = append(args, "--"+flagAdvertiseClientURL+"="+advertise)
	}
	if cfg.DebugListen != "" {
		args = append(args, "--"+flagListenDebug+"="+cfg.DebugListen)
	}
	if cfg.SnapshotCount != 0 {
		args = append(args, "--"+flagSnapshotCount+"="+strconv.FormatUint(cfg.SnapshotCount, 10))
	}
	if cfg.NoFsync {
		args = append(args, "--"+flagNoFsync)
	}
	if cfg.MaxRequestBytes != 0 {
		args = append(args, "--"+flagMaxRequestBytes+"="+strconv.Itoa(cfg.MaxRequestBytes))
	}
	return args
}

// parseInitialCluster parses etcd's "name=peerURL,name=peerURL" form, keeping
// the order given.
func parseInitialCluster(s string) ([]etcd.Peer, error) {
	var peers []etcd.Peer
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		name, url, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || name == "" || url == "" {
			return nil, fmt.Errorf("entry %q: want name=url", part)
		}
		if seen[name] {
			return nil, fmt.Errorf("member %s is listed twice", name)
		}
		seen[name] = true
		peers = append(peers, etcd.Peer{Name: name, PeerURL: url})
	}
	return peers, nil
}

func parseNameURLs(s string) (map[string]string, error) {
	peers, err := parseInitialCluster(s)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(peers))
	for _, p := range peers {
		out[p.Name] = p.PeerURL
	}
	return out, nil
}
