package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/runtime"
)

func TestNodeHost(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("node addresses are per node on Linux only")
	}
	a, b := clusterNet("demo")
	net := fmt.Sprintf("127.%d.%d.", a, b)
	tests := []struct {
		role    string
		index   int
		want    string
		wantErr bool
	}{
		{runtime.RoleMaster, 1, net + "11", false},
		{runtime.RoleMaster, MaxMasters, net + "99", false},
		{runtime.RoleWorker, 1, net + "101", false},
		{runtime.RoleWorker, MaxWorkers, net + "254", false},
		{runtime.RoleMaster, 0, "", true},
		{runtime.RoleMaster, MaxMasters + 1, "", true},
		{"etcd", 1, "", true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s-%d", tt.role, tt.index), func(t *testing.T) {
			got, err := NodeHost("demo", tt.role, tt.index)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("NodeHost = %q, %v; want %q, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
	// Each cluster has a /24 of its own, never 127.0.0.0/24.
	seen := map[string]string{}
	for _, name := range []string{"klab", "demo", "lab2", "ctl", "cli", "clk", "e2e"} {
		host, err := NodeHost(name, runtime.RoleMaster, 1)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(host, "127.0.0.") {
			t.Errorf("cluster %s got %s, inside 127.0.0.0/24", name, host)
		}
		if other, ok := seen[host]; ok {
			t.Errorf("clusters %s and %s share %s", other, name, host)
		}
		seen[host] = name
		if again, _ := NodeHost(name, runtime.RoleMaster, 1); again != host {
			t.Errorf("cluster %s got %s, then %s", name, host, again)
		}
	}
}

func TestAllocatePorts(t *testing.T) {
	host := "127.0.0.1"
	// Hold a port so that asking for it as a default must fall back.
	busy, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port

	ports, err := allocatePorts(host, []runtime.Port{{Name: "a", Default: busyPort}, {Name: "b"}, {Name: "c"}})
	if err != nil {
		t.Fatal(err)
	}
	if ports["a"] == busyPort || ports["a"] == 0 {
		t.Errorf("port a = %d, want a free one other than the busy %d", ports["a"], busyPort)
	}
	if ports["a"] == ports["b"] || ports["b"] == ports["c"] || ports["a"] == ports["c"] {
		t.Errorf("ports not distinct: %v", ports)
	}
	if err := checkPortsFree(host, ports); err != nil {
		t.Errorf("granted ports are not free again: %v", err)
	}
	if err := checkPortsFree(host, map[string]int{"busy": busyPort}); err == nil {
		t.Error("checkPortsFree accepted a port in use")
	}
	// A free default port is granted as asked.
	free := ports["b"]
	again, err := allocatePorts(host, []runtime.Port{{Name: "x", Default: free}})
	if err != nil || again["x"] != free {
		t.Errorf("default %d not granted: %v, %v", free, again, err)
	}
}

// newMemberRuntime creates one node running one etcd member.
func newMemberRuntime(t *testing.T) (*Runtime, runtime.Ref) {
	t.Helper()
	dir := t.TempDir()
	r := New(Options{Cluster: "test", Dir: dir})
	ctx := context.Background()
	node, err := r.CreateNode(ctx, runtime.NodeSpec{Name: "master-1", Role: runtime.RoleMaster, Index: 1,
		Ports: []runtime.Port{{Name: "client"}, {Name: "peer"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.CreateNode(ctx, runtime.NodeSpec{Name: "master-1", Role: runtime.RoleMaster, Index: 1}); err == nil {
		t.Error("a node was created twice")
	}
	ref := runtime.Ref{Node: "master-1", Component: runtime.ComponentEtcd}
	hostPort := func(p string) string { return net.JoinHostPort(node.Host, strconv.Itoa(node.Ports[p])) }
	member := runtime.EtcdSpec{
		Name:                "master-1",
		InitialClusterToken: "test",
		InitialCluster:      []etcd.Peer{{Name: "master-1", PeerURL: node.URL("peer"), ClientURL: node.URL("client")}},
		ListenClient:        hostPort("client"),
		ListenPeer:          hostPort("peer"),
		UnsafeNoFsync:       true,
	}
	if err := r.CreateComponent(ctx, runtime.ComponentSpec{Ref: ref, Etcd: &member}); err != nil {
		t.Fatal(err)
	}
	return r, ref
}

func stateOf(t *testing.T, r *Runtime, ref runtime.Ref) runtime.State {
	t.Helper()
	infos, err := r.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, ci := range infos {
		if ci.Ref == ref {
			return ci.State
		}
	}
	t.Fatalf("%s not listed", ref)
	return ""
}

func TestComponentLifecycle(t *testing.T) {
	r, ref := newMemberRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if got := stateOf(t, r, ref); got != runtime.StateCreated {
		t.Fatalf("state after create = %s", got)
	}
	if err := r.Pause(ctx, ref); err == nil {
		t.Error("pausing a component that never ran succeeded")
	}
	if err := r.Start(ctx, ref); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		op   func(context.Context, runtime.Ref) error
		want runtime.State
	}{
		{"start twice", r.Start, runtime.StateRunning},
		{"pause", r.Pause, runtime.StatePaused},
		{"pause twice", r.Pause, runtime.StatePaused},
		{"stop a paused member", r.Stop, runtime.StateStopped},
		{"stop twice", r.Stop, runtime.StateStopped},
		{"start on the same data", r.Start, runtime.StateRunning},
		{"kill", r.Kill, runtime.StateKilled},
		{"kill twice", r.Kill, runtime.StateKilled},
		{"start after kill", r.Start, runtime.StateRunning},
	}
	for _, s := range steps {
		if err := s.op(ctx, ref); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := stateOf(t, r, ref); got != s.want {
			t.Fatalf("after %s: state %s, want %s", s.name, got, s.want)
		}
	}

	logs, err := r.Logs(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(logs)
	logs.Close()
	if len(data) == 0 {
		t.Error("the member's log is empty")
	}

	missing := runtime.Ref{Node: "master-9", Component: "etcd"}
	if err := r.Kill(ctx, missing); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("kill of a missing component = %v, want ErrNotFound", err)
	}
	if err := r.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r.opts.Dir, "nodes")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("nodes dir left after Remove: %v", err)
	}
}

func TestPartition(t *testing.T) {
	r := New(Options{Cluster: "test", Dir: t.TempDir()})
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		if _, err := r.CreateNode(ctx, runtime.NodeSpec{Name: fmt.Sprintf("master-%d", i), Role: runtime.RoleMaster, Index: i}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Partition(ctx, []string{"master-1"}, []string{"master-4"}); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("partition with an unknown node = %v, want ErrNotFound", err)
	}
	changed := r.Faults().Changed()
	if err := r.Partition(ctx, []string{"master-1"}, []string{"master-2", "master-3"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	default:
		t.Error("the fault table did not announce the partition")
	}
	if ok, _ := r.Faults().Deliver("master-2", "master-1"); ok {
		t.Error("a message crossed the partition")
	}
	if ok, _ := r.Faults().Deliver("master-2", "master-3"); !ok {
		t.Error("the majority side cannot talk")
	}
	if n := len(r.Faults().Links()); n != 4 {
		t.Errorf("%d links cut, want 4 (two nodes, both ways)", n)
	}
	r.Heal(ctx)
	if n := len(r.Faults().Links()); n != 0 {
		t.Errorf("%d links still cut after heal", n)
	}
}
