package docker

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/runtime"
)

// TestStandDownAndUp stands an etcd member down inside its running
// container and up again: its port closes while the container runs on,
// the member comes back on its data without a new container, and a member
// whose container was stopped meanwhile is started instead.
func TestStandDownAndUp(t *testing.T) {
	info := testImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, cluster := newTestRuntime(t, ctx, info.Node)
	ports := []runtime.Port{{Name: "etcd-client", Default: 2379}, {Name: "etcd-peer", Default: 2380}}
	node, err := r.CreateNode(ctx, runtime.NodeSpec{Name: "master-1", Role: runtime.RoleMaster, Index: 1, Ports: ports})
	if err != nil {
		t.Fatal(err)
	}
	ref := runtime.Ref{Node: node.Name, Component: runtime.ComponentEtcd}
	peers := []etcd.Peer{{Name: node.Name, PeerURL: node.URL("etcd-peer"), ClientURL: node.URL("etcd-client")}}
	if err := r.CreateComponent(ctx, runtime.ComponentSpec{Ref: ref, Etcd: &runtime.EtcdSpec{
		Name: node.Name, InitialClusterToken: cluster, InitialCluster: peers, UnsafeNoFsync: true,
		ListenClient: node.Host + ":2379", ListenPeer: node.Host + ":2380",
	}}); err != nil {
		t.Fatal(err)
	}
	startAll(t, ctx, r, ref)
	endpoint := node.HostAddr("etcd-client")
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	waitLeader(t, ctx, cli, []string{endpoint}, -1)
	if _, err := cli.Put(ctx, "/kept", "yes"); err != nil {
		t.Fatal(err)
	}
	started := infoOf(t, r, ref).StartedAt

	if err := r.StandDown(ctx, ref); err != nil {
		t.Fatalf("StandDown: %v", err)
	}
	if serving(endpoint) {
		t.Errorf("the member still serves on %s after standing down", endpoint)
	}
	if got := infoOf(t, r, ref); got.State != runtime.StateRunning || !got.StartedAt.Equal(started) {
		t.Errorf("after standing down the container is %s, started %v; want running since %v", got.State, got.StartedAt, started)
	}
	if err := r.StandUp(ctx, ref); err != nil {
		t.Fatalf("StandUp: %v", err)
	}
	if got := infoOf(t, r, ref); !got.StartedAt.Equal(started) {
		t.Errorf("standing up restarted the container (started %v, was %v)", got.StartedAt, started)
	}
	waitLeader(t, ctx, cli, []string{endpoint}, -1)
	if resp, err := cli.Get(ctx, "/kept"); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("after standing up: get /kept = %v, %v; want the key written before", resp, err)
	}

	// Stood down, then stopped with its container: StandUp starts it.
	if err := r.StandDown(ctx, ref); err != nil {
		t.Fatalf("StandDown: %v", err)
	}
	if err := r.Stop(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if err := r.StandUp(ctx, ref); err != nil {
		t.Fatalf("StandUp of a stopped container: %v", err)
	}
	if got := infoOf(t, r, ref); got.State != runtime.StateRunning || !got.StartedAt.After(started) {
		t.Errorf("StandUp of a stopped container: %s, started %v; want running, started again", got.State, got.StartedAt)
	}
	waitLeader(t, ctx, cli, []string{endpoint}, -1)
}
