package runtime

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/klab-dev/klab/cluster/etcd"
)

func parseEtcd(t *testing.T, args []string) (etcd.Config, error) {
	t.Helper()
	fs := pflag.NewFlagSet("etcd", pflag.ContinueOnError)
	build := EtcdFlags(fs)
	if err := fs.Parse(args); err != nil {
		return etcd.Config{}, err
	}
	return build()
}

// TestEtcdArgsRoundTrip checks that a member started through `klab component
// etcd` gets the configuration it would have had in-process.
func TestEtcdArgsRoundTrip(t *testing.T) {
	peers := []etcd.Peer{
		{Name: "master-1", PeerURL: "http://10.0.0.1:2380", ClientURL: "http://10.0.0.1:2379"},
		{Name: "master-2", PeerURL: "http://10.0.0.2:2380", ClientURL: "http://10.0.0.2:2379"},
	}
	tests := []struct {
		name string
		cfg  etcd.Config
	}{
		{"defaults", etcd.Config{
			Name: "master-1", DataDir: "/data", ClusterToken: "klab-demo", InitialCluster: peers,
			ClientListen: "10.0.0.1:2379", PeerListen: "10.0.0.1:2380",
			TickInterval: 100 * time.Millisecond, ElectionTicks: 10, HeartbeatTicks: 1,
			SnapshotCount: etcd.DefaultSnapshotCount, MaxRequestBytes: etcd.DefaultMaxRequestBytes,
		}},
		{"tuned and joining", etcd.Config{
			Name: "master-2", DataDir: "/d2", ClusterToken: "t", InitialCluster: peers, Join: true,
			ClientListen: "10.0.0.2:2379", PeerListen: "10.0.0.2:2380", DebugListen: "10.0.0.2:9000",
			TickInterval: 50 * time.Millisecond, ElectionTicks: 20, HeartbeatTicks: 1,
			SnapshotCount: 100, NoFsync: true, MaxRequestBytes: 4096,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseEtcd(t, EtcdArgs(tt.cfg))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.cfg) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, tt.cfg)
			}
		})
	}
}

func TestEtcdFlagsErrors(t *testing.T) {
	base := []string{"--name=m1", "--data-dir=/d", "--initial-cluster=m1=http://a:2380", "--listen-client=a:2379", "--listen-peer=a:2380"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing name", base[1:], "--name is required"},
		{"bad initial cluster", append(base, "--initial-cluster=m1"), "want name=url"},
		{"duplicate member", append(base, "--initial-cluster=m1=http://a,m1=http://b"), "listed twice"},
		{"bad state", append(base, "--initial-cluster-state=maybe"), `not "maybe"`},
		{"election too short", append(base, "--election-timeout=200"), "five times"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseEtcd(t, tt.args)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	cfg, err := parseEtcd(t, base)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.InitialCluster[0].ClientURL != "http://a:2379" {
		t.Errorf("advertised client URL = %q, want the listen address", cfg.InitialCluster[0].ClientURL)
	}
}

func TestParseRef(t *testing.T) {
	if r, err := ParseRef("master-2/etcd"); err != nil || r != (Ref{Node: "master-2", Component: "etcd"}) || r.String() != "master-2/etcd" {
		t.Errorf("ParseRef = %v, %v", r, err)
	}
	for _, bad := range []string{"", "master-2", "/etcd", "master-2/", "a/b/c"} {
		if _, err := ParseRef(bad); err == nil {
			t.Errorf("ParseRef(%q) accepted", bad)
		}
	}
}
