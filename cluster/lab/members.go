package lab

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/pki"
	"github.com/klab-dev/klab/cluster/runtime"
)

// DefaultLeaderTimeout bounds the wait for the first leader. An election
// takes about a second with etcd's timings; the margin is for slow disks and
// busy laptops.
const DefaultLeaderTimeout = 60 * time.Second

// membersOf derives each master's etcd member from its node: named after
// the node, listening on the node's etcd ports. The peer URL is the one the
// members know each other by (the member ID derives from it); the client
// and debug URLs are where this machine reaches the member, which in Docker
// is a port published on 127.0.0.1. The URLs are https:// when creds are
// set.
func membersOf(nodes []runtime.Node, token string, creds EtcdCredentials) []MemberInfo {
	members := make([]MemberInfo, len(nodes))
	for i, n := range nodes {
		peer := creds.withScheme(n.URL("etcd-peer"))
		members[i] = MemberInfo{
			Name:      n.Name,
			ID:        fmt.Sprintf("%x", etcd.MemberID(peer, token)),
			PeerURL:   peer,
			ClientURL: creds.withScheme(n.HostURL("etcd-client")),
			DebugURL:  creds.withScheme(n.HostURL("etcd-peer")) + "/debug/klab",
			etcd:      creds,
		}
	}
	return members
}

// etcdCredentials returns the credentials of the cluster's etcd: its PKI's
// for a new cluster or one that already had them; none for a cluster made
// before etcd had TLS, whose members keep the http:// peer URLs their IDs
// derive from.
func (b *bringUp) etcdCredentials() EtcdCredentials {
	if b.prev != nil {
		return b.prev.EtcdCredentials
	}
	return etcdCredentialsIn(filepath.Join(b.c.dir, pkiDirName))
}

// ensureEtcdPKI creates (or loads) the etcd CA and the members' and
// clients' certificates, before any member starts.
func (b *bringUp) ensureEtcdPKI(context.Context) error {
	if b.etcdCredentials() == (EtcdCredentials{}) {
		return nil
	}
	dir := filepath.Join(b.c.dir, pkiDirName)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		b.onFailure("remove the PKI", func(context.Context) error { return os.RemoveAll(dir) })
	}
	members := make([]pki.EtcdMember, len(b.masters))
	for i, n := range b.masters {
		members[i] = pki.EtcdMember{Name: n.Name, Hosts: []string{n.Host}}
	}
	var err error
	b.etcdPKI, err = pki.EnsureEtcd(dir, members)
	return err
}

// etcdSpec describes the member on master n. The members bootstrap
// together, as a new etcd cluster's do: none can elect a leader alone, and
// the runner starts them at once.
func (b *bringUp) etcdSpec(n runtime.Node) (runtime.ComponentSpec, error) {
	creds := b.etcdCredentials()
	peers := make([]etcd.Peer, len(b.masters))
	for i, m := range b.masters {
		peers[i] = etcd.Peer{Name: m.Name, PeerURL: creds.withScheme(m.URL("etcd-peer")), ClientURL: creds.withScheme(m.URL("etcd-client"))}
	}
	spec := &runtime.EtcdSpec{
		Name:                n.Name,
		InitialClusterToken: b.token(),
		InitialCluster:      peers,
		ListenClient:        hostPort(n, "etcd-client"),
		ListenPeer:          hostPort(n, "etcd-peer"),
		UnsafeNoFsync:       b.c.spec.NoFsync,
		QuotaBackendBytes:   b.c.spec.QuotaBackendBytes,
	}
	if creds != (EtcdCredentials{}) {
		dir := pki.EtcdDir(filepath.Join(b.c.dir, pkiDirName))
		member := func(file string) string { return filepath.Join(dir, n.Name, file) }
		spec.TrustedCAFile, spec.CertFile, spec.KeyFile = creds.CACert, member(pki.EtcdServerCertFile), member(pki.EtcdServerKeyFile)
		spec.PeerTrustedCAFile, spec.PeerCertFile, spec.PeerKeyFile = creds.CACert, member(pki.EtcdPeerCertFile), member(pki.EtcdPeerKeyFile)
		if n.Ports[etcdMetricsPortName] != 0 {
			spec.ListenMetrics = hostPort(n, etcdMetricsPortName)
		}
	}
	return runtime.ComponentSpec{Etcd: spec}, nil
}

// etcdHealthURL is what master n's kubelet probes for the etcd mirror pod:
// the plain-HTTP /health of the metrics port when the member is behind
// TLS (kubeadm's probe of 127.0.0.1:2381), else the peer port's.
func (b *bringUp) etcdHealthURL(n runtime.Node) string {
	if b.etcdCredentials() != (EtcdCredentials{}) && n.Ports[etcdMetricsPortName] != 0 {
		return "http://" + hostPort(n, etcdMetricsPortName) + "/health"
	}
	return n.URL("etcd-peer") + "/health"
}

// waitLeader waits for the members' first leader.
func (b *bringUp) waitLeader(ctx context.Context) error {
	timeout := b.opts.LeaderTimeout
	if timeout == 0 {
		timeout = DefaultLeaderTimeout
	}
	return waitLeader(ctx, b.c.members, timeout)
}

// waitLeader waits until one member reports itself leader and a quorum of
// members follow it. Members publish no "leader elected" event across
// processes, so this polls their status every 50 ms until the deadline.
func waitLeader(ctx context.Context, members []MemberInfo, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		answers := fetchAll(ctx, members)
		if i, ok := leaderOf(answers); ok {
			id, followers := answers[i].status.ID, 0
			for _, a := range answers {
				if a.err == nil && a.status.Leader == id && a.status.Term == answers[i].status.Term {
					followers++
				}
			}
			if followers >= len(members)/2+1 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return i18n.Wrap(ctx.Err(), "lab.err.leader-timeout", timeout)
		case <-tick.C:
		}
	}
}
