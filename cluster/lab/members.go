package lab

import (
	"context"
	"fmt"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/etcd"
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
// is a port published on 127.0.0.1.
func membersOf(nodes []runtime.Node, token string) []MemberInfo {
	members := make([]MemberInfo, len(nodes))
	for i, n := range nodes {
		peer := n.URL("etcd-peer")
		members[i] = MemberInfo{
			Name:      n.Name,
			ID:        fmt.Sprintf("%x", etcd.MemberID(peer, token)),
			PeerURL:   peer,
			ClientURL: n.HostURL("etcd-client"),
			DebugURL:  n.HostURL("etcd-peer") + "/debug/klab",
		}
	}
	return members
}

// etcdSpec describes the member on master n. The members bootstrap
// together, as a new etcd cluster's do: none can elect a leader alone, and
// the runner starts them at once.
func (b *bringUp) etcdSpec(n runtime.Node) (runtime.ComponentSpec, error) {
	peers := make([]etcd.Peer, len(b.masters))
	for i, m := range b.masters {
		peers[i] = etcd.Peer{Name: m.Name, PeerURL: m.URL("etcd-peer"), ClientURL: m.URL("etcd-client")}
	}
	return runtime.ComponentSpec{Etcd: &runtime.EtcdSpec{
		Name:                n.Name,
		InitialClusterToken: b.token(),
		InitialCluster:      peers,
		ListenClient:        hostPort(n, "etcd-client"),
		ListenPeer:          hostPort(n, "etcd-peer"),
		UnsafeNoFsync:       b.c.spec.NoFsync,
		QuotaBackendBytes:   b.c.spec.QuotaBackendBytes,
	}}, nil
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
