package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// TestEtcdCluster runs a three-member etcd cluster, each member in its own
// container on its own node, and puts it through what chaos does: kill the
// leader, stop, pause, partition and heal, then removes it.
func TestEtcdCluster(t *testing.T) {
	info := testImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, cluster := newTestRuntime(t, ctx, info.Node)
	var err error

	// Nodes.
	ports := []runtime.Port{{Name: "etcd-client", Default: 2379}, {Name: "etcd-peer", Default: 2380}}
	nodes := make([]runtime.Node, 3)
	for i := range nodes {
		name := fmt.Sprintf("master-%d", i+1)
		nodes[i], err = r.CreateNode(ctx, runtime.NodeSpec{Name: name, Role: runtime.RoleMaster, Index: i + 1, Ports: ports})
		if err != nil {
			t.Fatal(err)
		}
	}
	n, err := r.network(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, node := range nodes {
		wantHost := fmt.Sprintf("10.%d.0.%d", n.x, 11+i)
		if node.Host != wantHost || node.Ports["etcd-client"] != 2379 || node.PodCIDR != fmt.Sprintf("10.%d.%d.0/24", n.x, i+1) {
			t.Errorf("node %d = %+v, want host %s", i+1, node, wantHost)
		}
		if !strings.HasPrefix(node.Published["etcd-client"], "127.0.0.1:") || node.HostAddr("etcd-peer") == node.HostAddr("etcd-client") {
			t.Errorf("node %s published %v", node.Name, node.Published)
		}
	}
	if _, err := r.CreateNode(ctx, runtime.NodeSpec{Name: "master-1", Role: runtime.RoleMaster, Index: 1, Ports: ports}); err == nil {
		t.Error("a second master-1 was created")
	}

	// Members.
	peers := make([]etcd.Peer, len(nodes))
	for i, node := range nodes {
		peers[i] = etcd.Peer{Name: node.Name, PeerURL: node.URL("etcd-peer"), ClientURL: node.URL("etcd-client")}
	}
	refs := make([]runtime.Ref, len(nodes))
	endpoints := make([]string, len(nodes))
	for i, node := range nodes {
		refs[i] = runtime.Ref{Node: node.Name, Component: runtime.ComponentEtcd}
		endpoints[i] = node.HostAddr("etcd-client")
		member := &runtime.EtcdSpec{
			Name: node.Name, InitialClusterToken: cluster, InitialCluster: peers, UnsafeNoFsync: true,
			ListenClient: fmt.Sprintf("%s:%d", node.Host, node.Ports["etcd-client"]),
			ListenPeer:   fmt.Sprintf("%s:%d", node.Host, node.Ports["etcd-peer"]),
		}
		if err := r.CreateComponent(ctx, runtime.ComponentSpec{Ref: refs[i], Etcd: member}); err != nil {
			t.Fatal(err)
		}
	}
	assertStates(t, r, runtime.StateCreated, runtime.StateCreated, runtime.StateCreated)
	startAll(t, ctx, r, refs...)
	assertStates(t, r, runtime.StateRunning, runtime.StateRunning, runtime.StateRunning)

	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	leader := waitLeader(t, ctx, cli, endpoints, -1)
	if mem, err := r.Stats(ctx); err != nil || mem <= 0 {
		t.Errorf("Stats = %d, %v; want the members' memory", mem, err)
	}

	// Kill the leader: the others elect a new one; restarted, it finds
	// its data on its volume and rejoins.
	if err := r.Kill(ctx, refs[leader]); err != nil {
		t.Fatal(err)
	}
	if err := r.Kill(ctx, refs[leader]); err != nil {
		t.Errorf("a second Kill: %v", err)
	}
	if got := stateOfRef(t, r, refs[leader]); got != runtime.StateKilled {
		t.Errorf("killed member is %s", got)
	}
	newLeader := waitLeader(t, ctx, cli, endpoints, leader)
	startAll(t, ctx, r, refs[leader])
	waitLeader(t, ctx, cli, endpoints, -1)

	// Pause, stop and kill a follower; a paused one can be stopped and
	// killed.
	follower := (newLeader + 1) % len(refs)
	if follower == leader {
		follower = (follower + 1) % len(refs)
	}
	type step struct {
		name string
		do   func(context.Context, runtime.Ref) error
		want runtime.State
	}
	for _, round := range [][]step{{
		{"pause", r.Pause, runtime.StatePaused},
		{"pause again", r.Pause, runtime.StatePaused},
		{"resume", r.Resume, runtime.StateRunning},
		{"resume again", r.Resume, runtime.StateRunning},
		{"pause", r.Pause, runtime.StatePaused},
		{"stop while paused", r.Stop, runtime.StateStopped},
		{"stop again", r.Stop, runtime.StateStopped},
	}, {
		{"pause", r.Pause, runtime.StatePaused},
		{"kill while paused", r.Kill, runtime.StateKilled},
		{"kill again", r.Kill, runtime.StateKilled},
	}} {
		for _, step := range round {
			if err := step.do(ctx, refs[follower]); err != nil {
				t.Fatalf("%s %s: %v", step.name, refs[follower], err)
			}
			if got := stateOfRef(t, r, refs[follower]); got != step.want {
				t.Errorf("after %s: %s is %s, want %s", step.name, refs[follower], got, step.want)
			}
		}
		if err := r.Pause(ctx, refs[follower]); err == nil {
			t.Error("a member that is down was paused")
		}
		startAll(t, ctx, r, refs[follower])
	}

	// Partition master-3 away from the others: its node leaves the
	// network, and comes back at its address, with its published ports.
	if err := r.Partition(ctx, []string{"master-3"}, []string{"master-1"}); !errors.Is(err, ErrPartialPartition) {
		t.Errorf("partition leaving master-2 out: %v", err)
	}
	// A fresh runtime, as `klab chaos` in another process would use.
	chaos, err := New(ctx, Options{Cluster: cluster})
	if err != nil {
		t.Fatal(err)
	}
	defer chaos.Close()
	if err := chaos.Partition(ctx, []string{"master-3"}, []string{"master-1", "master-2"}); err != nil {
		t.Fatal(err)
	}
	if ip := nodeNetworkIP(t, r, "master-3", n.name); ip != "" {
		t.Errorf("master-3 is still on the network at %s", ip)
	}
	if serving(endpoints[2]) {
		t.Error("master-3's client port still answers during the partition")
	}
	waitLeader(t, ctx, cli, endpoints[:2], -1)
	if err := chaos.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if ip := nodeNetworkIP(t, r, "master-3", n.name); ip != nodes[2].Host {
		t.Errorf("master-3 reconnected at %q, want %s", ip, nodes[2].Host)
	}
	if !serving(endpoints[2]) {
		t.Errorf("master-3's client port %s does not answer after heal", endpoints[2])
	}
	waitLeader(t, ctx, cli, endpoints, -1)

	// A node created again (`klab start`) keeps its address and ports.
	again, err := r.CreateNode(ctx, runtime.NodeSpec{Name: "master-1", Role: runtime.RoleMaster, Index: 1, Reuse: &nodes[0]})
	if err != nil {
		t.Fatal(err)
	}
	if again.Host != nodes[0].Host || again.HostAddr("etcd-client") != nodes[0].HostAddr("etcd-client") {
		t.Errorf("reused node = %+v, want %+v", again, nodes[0])
	}
	// A node's container stopped under its running member (docker stop,
	// by hand): Start brings both back, the member in the node's new
	// namespace, at the same published port.
	pause, err := r.nodeContainer(ctx, "master-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cli.ContainerStop(ctx, pause.ID, container.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	startAll(t, ctx, r, refs[0])
	waitLeader(t, ctx, cli, endpoints, -1)

	logs, err := r.Logs(ctx, refs[0])
	if err != nil {
		t.Fatal(err)
	}
	text, err := io.ReadAll(logs)
	logs.Close()
	if err != nil || len(text) == 0 {
		t.Errorf("logs of %s: %d bytes, %v", refs[0], len(text), err)
	}
	if _, err := r.Logs(ctx, runtime.Ref{Node: "master-1", Component: "nothing"}); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("logs of an unknown component: %v", err)
	}

	// A member that cannot start (its address is not the node's) fails
	// Start with its exit code and log.
	bad := runtime.Ref{Node: "master-1", Component: "etcd-broken"}
	if err := r.CreateComponent(ctx, runtime.ComponentSpec{Ref: bad, Etcd: &runtime.EtcdSpec{
		Name: "broken", InitialClusterToken: "x", InitialCluster: []etcd.Peer{{Name: "broken", PeerURL: "http://10.254.0.1:2390"}},
		ListenClient: "10.254.0.1:2389", ListenPeer: "10.254.0.1:2390",
	}}); err != nil {
		t.Fatal(err)
	}
	err = r.Start(ctx, bad)
	if err == nil || !strings.Contains(err.Error(), "exited with code") {
		t.Errorf("start of a broken member: %v, want its exit", err)
	}
	if got := infoOf(t, r, bad); got.State != runtime.StateExited || !strings.Contains(got.Error, "exited with code 1: ") {
		t.Errorf("broken member is %s (%q), want exited with its code and last log line", got.State, got.Error)
	}

	if err := r.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, cluster)
}

// startAll starts components together, as a new etcd cluster's members
// must start.
func startAll(t *testing.T, ctx context.Context, r *Runtime, refs ...runtime.Ref) {
	t.Helper()
	errs := make([]error, len(refs))
	var wg sync.WaitGroup
	for i, ref := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.Start(ctx, ref)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// waitLeader waits until a majority of the members at endpoints follow one
// leader other than the member at index not, and returns the leader's index.
// Members announce no election to the outside, so this polls every 50 ms
// until the test's deadline.
func waitLeader(t *testing.T, ctx context.Context, cli *clientv3.Client, endpoints []string, not int) int {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ids := make([]uint64, len(endpoints))
		votes := map[uint64]int{}
		for i, ep := range endpoints {
			sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			st, err := cli.Status(sctx, ep)
			cancel()
			if err != nil {
				continue
			}
			ids[i] = st.Header.MemberId
			if st.Leader != 0 {
				votes[st.Leader]++
			}
		}
		for leader, n := range votes {
			if n < len(endpoints)/2+1 {
				continue
			}
			for i, id := range ids {
				if id == leader && i != not {
					return i
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no leader among %v: %v", endpoints, ctx.Err())
		case <-tick.C:
		}
	}
}

func assertStates(t *testing.T, r *Runtime, want ...runtime.State) {
	t.Helper()
	infos, err := r.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != len(want) {
		t.Fatalf("List = %+v, want %d components", infos, len(want))
	}
	for i, info := range infos {
		wantRef := runtime.Ref{Node: fmt.Sprintf("master-%d", i+1), Component: runtime.ComponentEtcd}
		if info.Ref != wantRef || info.State != want[i] {
			t.Errorf("List[%d] = %+v, want %s %s", i, info, wantRef, want[i])
		}
		if want[i] == runtime.StateRunning && info.StartedAt.IsZero() {
			t.Errorf("List[%d] has no start time", i)
		}
	}
}

func stateOfRef(t *testing.T, r *Runtime, ref runtime.Ref) runtime.State {
	t.Helper()
	return infoOf(t, r, ref).State
}

func infoOf(t *testing.T, r *Runtime, ref runtime.Ref) runtime.ComponentInfo {
	t.Helper()
	infos, err := r.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		if info.Ref == ref {
			return info
		}
	}
	t.Fatalf("List has no %s", ref)
	return runtime.ComponentInfo{}
}

// nodeNetworkIP returns a node's address on the named network, "" when it
// is not attached.
func nodeNetworkIP(t *testing.T, r *Runtime, node, network string) string {
	t.Helper()
	c, err := r.nodeContainer(context.Background(), node)
	if err != nil {
		t.Fatal(err)
	}
	inspect, err := r.cli.ContainerInspect(context.Background(), c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ep, ok := inspect.NetworkSettings.Networks[network]; ok {
		return ep.IPAddress
	}
	if inspect.Config.Labels[labels.Node] != node {
		t.Fatalf("container of %s is labelled %v", node, inspect.Config.Labels)
	}
	return ""
}
