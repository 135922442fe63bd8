package components

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/runtime"
)

// TestEtcdConfig checks that a member's spec becomes the configuration it
// would have had from etcd's own flags: millisecond timings become ticks,
// and the member's client URL defaults to its listen address.
func TestEtcdConfig(t *testing.T) {
	peers := []etcd.Peer{
		{Name: "master-1", PeerURL: "http://10.0.0.1:2380"},
		{Name: "master-2", PeerURL: "http://10.0.0.2:2380", ClientURL: "http://10.0.0.2:2379"},
	}
	tests := []struct {
		name    string
		spec    runtime.EtcdSpec
		want    etcd.Config
		wantErr string
	}{
		{
			name: "upstream timings by default",
			spec: runtime.EtcdSpec{
				Name: "master-1", DataDir: "/data", InitialClusterToken: "klab-demo", InitialCluster: peers,
				ListenClient: "10.0.0.1:2379", ListenPeer: "10.0.0.1:2380",
			},
			want: etcd.Config{
				Name: "master-1", DataDir: "/data", ClusterToken: "klab-demo",
				InitialCluster: []etcd.Peer{{Name: "master-1", PeerURL: "http://10.0.0.1:2380", ClientURL: "http://10.0.0.1:2379"}, peers[1]},
				ClientListen:   "10.0.0.1:2379", PeerListen: "10.0.0.1:2380",
				TickInterval: 100 * time.Millisecond, ElectionTicks: 10, HeartbeatTicks: 1,
			},
		},
		{
			name: "tuned and joining",
			spec: runtime.EtcdSpec{
				Name: "master-2", DataDir: "/d2", InitialClusterToken: "t", InitialCluster: peers, Join: true,
				ListenClient: "10.0.0.2:2379", ListenPeer: "10.0.0.2:2380", ListenDebug: "10.0.0.2:9000",
				HeartbeatInterval: 50, ElectionTimeout: 1000, SnapshotCount: 100, UnsafeNoFsync: true, MaxRequestBytes: 4096,
			},
			want: etcd.Config{
				Name: "master-2", DataDir: "/d2", ClusterToken: "t", InitialCluster: peers, Join: true,
				ClientListen: "10.0.0.2:2379", PeerListen: "10.0.0.2:2380", DebugListen: "10.0.0.2:9000",
				TickInterval: 50 * time.Millisecond, ElectionTicks: 20, HeartbeatTicks: 1,
				SnapshotCount: 100, NoFsync: true, MaxRequestBytes: 4096,
			},
		},
		{
			name:    "election timeout too short",
			spec:    runtime.EtcdSpec{Name: "m", HeartbeatInterval: 100, ElectionTimeout: 300},
			wantErr: "electionTimeout (300 ms) must be at least five times heartbeatInterval (100 ms)",
		},
		{
			name:    "negative heartbeat",
			spec:    runtime.EtcdSpec{Name: "m", HeartbeatInterval: -1, ElectionTimeout: 1000},
			wantErr: "heartbeatInterval (-1 ms)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := etcdConfig(tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreUnexported(etcd.Config{})); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
	if peers[0].ClientURL != "" {
		t.Error("etcdConfig changed the spec's peers")
	}
}
