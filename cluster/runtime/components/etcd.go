package components

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/etcd/fault"
	"github.com/klab-dev/klab/cluster/pki"
	"github.com/klab-dev/klab/cluster/runtime"
)

// Etcd starts the etcd member spec describes and returns once it serves.
// faults is the network-fault layer its raft transport consults: the local
// runtime's, which enforces partitions in-process; nil in a container,
// where the network itself is cut.
func Etcd(ctx context.Context, spec runtime.EtcdSpec, faults *fault.Table, logger *slog.Logger) (*etcd.Member, error) {
	cfg, err := etcdConfig(spec)
	if err != nil {
		return nil, err
	}
	cfg.Faults, cfg.Logger = faults, logger
	// A restore the runtime left for the member (etcd.RestorePending)
	// is made before the data dir is opened.
	if res, err := etcd.RestorePending(cfg.DataDir); err != nil {
		return nil, err
	} else if res != nil {
		logger.Info("data dir restored from a snapshot", "name", cfg.Name, "cluster", fmt.Sprintf("%x", res.ClusterID), "revision", res.Revision)
	}
	m, err := etcd.NewMember(cfg)
	if err != nil {
		return nil, err
	}
	if err := m.Start(ctx); err != nil {
		return nil, err
	}
	logger.Info("etcd member serving", "name", m.Name(), "id", fmt.Sprintf("%x", m.ID()), "client", m.ClientURL(), "peer", m.PeerURL())
	return m, nil
}

// etcdConfig turns a member's spec into the member's configuration:
// etcd's millisecond timings into ticks, as etcd counts its election
// timeout in heartbeats, and the member's own client URL defaulted to its
// listen address.
func etcdConfig(spec runtime.EtcdSpec) (etcd.Config, error) {
	heartbeat, election := spec.HeartbeatInterval, spec.ElectionTimeout
	if heartbeat == 0 {
		heartbeat = int(etcd.DefaultTickInterval / time.Millisecond)
	}
	if election == 0 {
		election = etcd.DefaultElectionTicks * heartbeat
	}
	if heartbeat < 0 || election < 5*heartbeat {
		return etcd.Config{}, fmt.Errorf("etcd member %s: electionTimeout (%d ms) must be at least five times heartbeatInterval (%d ms)", spec.Name, election, heartbeat)
	}
	clientTLS, peerTLS, peerClientTLS, err := etcdTLS(spec)
	if err != nil {
		return etcd.Config{}, err
	}
	scheme := "http://"
	if clientTLS != nil {
		scheme = "https://"
	}
	peers := slices.Clone(spec.InitialCluster)
	for i := range peers {
		if peers[i].Name == spec.Name && peers[i].ClientURL == "" {
			peers[i].ClientURL = scheme + spec.ListenClient
		}
	}
	return etcd.Config{
		ClientTLS:         clientTLS,
		PeerTLS:           peerTLS,
		PeerClientTLS:     peerClientTLS,
		MetricsListen:     spec.ListenMetrics,
		Name:              spec.Name,
		DataDir:           spec.DataDir,
		ClusterToken:      spec.InitialClusterToken,
		InitialCluster:    peers,
		Join:              spec.Join,
		ClientListen:      spec.ListenClient,
		PeerListen:        spec.ListenPeer,
		DebugListen:       spec.ListenDebug,
		TickInterval:      time.Duration(heartbeat) * time.Millisecond,
		HeartbeatTicks:    1,
		ElectionTicks:     election / heartbeat,
		SnapshotCount:     spec.SnapshotCount,
		NoFsync:           spec.UnsafeNoFsync,
		MaxRequestBytes:   spec.MaxRequestBytes,
		QuotaBackendBytes: spec.QuotaBackendBytes,
	}, nil
}

// etcdTLS loads the member's TLS files: all three of a port's or none.
func etcdTLS(spec runtime.EtcdSpec) (client, peer, peerClient *tls.Config, err error) {
	clientFiles := []string{spec.TrustedCAFile, spec.CertFile, spec.KeyFile}
	peerFiles := []string{spec.PeerTrustedCAFile, spec.PeerCertFile, spec.PeerKeyFile}
	for what, files := range map[string][]string{"client": clientFiles, "peer": peerFiles} {
		if n := len(slices.DeleteFunc(slices.Clone(files), func(f string) bool { return f == "" })); n != 0 && n != 3 {
			return nil, nil, nil, fmt.Errorf("etcd member %s: %s TLS needs a CA file, a certificate and a key; %d of them are set", spec.Name, what, n)
		}
	}
	if spec.CertFile != "" {
		if client, err = pki.EtcdServerTLS(spec.TrustedCAFile, spec.CertFile, spec.KeyFile); err != nil {
			return nil, nil, nil, fmt.Errorf("etcd member %s: %w", spec.Name, err)
		}
	}
	if spec.PeerCertFile != "" {
		if peer, err = pki.EtcdServerTLS(spec.PeerTrustedCAFile, spec.PeerCertFile, spec.PeerKeyFile); err != nil {
			return nil, nil, nil, fmt.Errorf("etcd member %s: %w", spec.Name, err)
		}
		if peerClient, err = pki.EtcdClientTLS(spec.PeerTrustedCAFile, spec.PeerCertFile, spec.PeerKeyFile); err != nil {
			return nil, nil, nil, fmt.Errorf("etcd member %s: %w", spec.Name, err)
		}
	}
	return client, peer, peerClient, nil
}
