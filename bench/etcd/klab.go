package etcdbench

import (
	"testing"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

// KlabCluster is a cluster of klab etcd members started by the etcdtest
// harness.
type KlabCluster struct {
	c *etcdtest.Cluster
}

// StartKlab starts n klab members with upstream default timings (heartbeat
// 100 ms, election 1000 ms) and waits for a leader. noFsync turns fsync off.
// Like etcdtest.New it reports failures through tb and registers its cleanup
// (stopping the members, removing the data dirs) with tb.Cleanup.
func StartKlab(tb testing.TB, n int, noFsync bool) *KlabCluster {
	tb.Helper()
	c := etcdtest.New(tb, n, func(cfg *etcd.Config) {
		cfg.TickInterval = etcd.DefaultTickInterval
		cfg.ElectionTicks = etcd.DefaultElectionTicks
		cfg.HeartbeatTicks = etcd.DefaultHeartbeatTicks
		cfg.NoFsync = noFsync
	})
	return &KlabCluster{c: c}
}

// System implements Cluster.
func (k *KlabCluster) System() string { return "klab" }

// Size implements Cluster.
func (k *KlabCluster) Size() int { return len(k.c.Peers) }

// Endpoint implements Cluster.
func (k *KlabCluster) Endpoint(i int) string { return k.c.Peers[i].ClientURL }

// Leader implements Cluster.
func (k *KlabCluster) Leader() int { return k.c.Leader() }

// Kill implements Cluster: etcdtest's Kill is the member's abrupt stop.
func (k *KlabCluster) Kill(i int) error {
	k.c.Kill(i)
	return nil
}

// Restart implements Cluster.
func (k *KlabCluster) Restart(i int) error { return k.c.Start(i) }

// Close implements Cluster. The data dirs go with the harness's cleanup.
func (k *KlabCluster) Close() { k.c.Close() }
