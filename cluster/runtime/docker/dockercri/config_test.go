package dockercri

import (
	"context"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func TestConfigFromEnv(t *testing.T) {
	all := map[string]string{
		EnvCluster: "lab", EnvNode: "worker-1", EnvNetwork: "klab-lab",
		EnvPodCIDR: "10.244.1.0/24", EnvPauseImage: "klab/node:abc",
	}
	tests := []struct {
		name    string
		unset   []string
		wantErr string
	}{
		{name: "all set"},
		{name: "one missing", unset: []string{EnvPodCIDR}, wantErr: "environment variable KLAB_POD_CIDR not set"},
		{name: "two missing", unset: []string{EnvCluster, EnvPauseImage}, wantErr: "KLAB_CLUSTER, KLAB_PAUSE_IMAGE not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range all {
				t.Setenv(k, v)
			}
			for _, k := range tt.unset {
				t.Setenv(k, "")
			}
			cfg, err := ConfigFromEnv()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ConfigFromEnv() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ConfigFromEnv: %v", err)
			}
			want := Config{Cluster: "lab", Node: "worker-1", Network: "klab-lab", PodCIDR: "10.244.1.0/24", PauseImage: "klab/node:abc"}
			if !reflect.DeepEqual(cfg, want) {
				t.Errorf("ConfigFromEnv() = %+v, want %+v", cfg, want)
			}
		})
	}
}

// TestNewRejectsBadConfig covers the checks New makes before it talks to
// the engine.
func TestNewRejectsBadConfig(t *testing.T) {
	good := Config{Cluster: "lab", Node: "n1", Network: "klab-lab", PodCIDR: "10.244.1.0/24", PauseImage: "klab/node:x"}
	tests := []struct {
		name    string
		edit    func(*Config)
		wantErr string
	}{
		{"no cluster", func(c *Config) { c.Cluster = "" }, "no cluster given"},
		{"no pause image", func(c *Config) { c.PauseImage = "" }, "no pause image given"},
		{"bad CIDR", func(c *Config) { c.PodCIDR = "10.244.1.0" }, `pod CIDR "10.244.1.0"`},
		{"tiny CIDR", func(c *Config) { c.PodCIDR = "10.244.1.0/30" }, "too small"},
		{"IPv6 CIDR", func(c *Config) { c.PodCIDR = "fd00::/64" }, "only IPv4"},
		{"node IP alone", func(c *Config) { c.NodeIP = "10.244.0.3" }, "give both or neither"},
		{"Service CIDR alone", func(c *Config) { c.ServiceCIDR = "10.96.0.0/12" }, "give both or neither"},
		{"bad node IP", func(c *Config) { c.NodeIP, c.ServiceCIDR = "node", "10.96.0.0/12" }, `node IP "node"`},
		{"Service CIDR without a DNS address", func(c *Config) { c.NodeIP, c.ServiceCIDR = "10.244.0.3", "10.96.0.0/29" }, "no tenth address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.edit(&cfg)
			_, err := New(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New() error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestNewChecksEngine covers the checks New makes on the engine.
func TestNewChecksEngine(t *testing.T) {
	requireEngine(t)
	t.Parallel()
	good := Config{Cluster: engine.cluster, Node: "checks", Network: engine.network, PodCIDR: "10.0.0.0/24", PauseImage: engine.image}
	tests := []struct {
		name    string
		edit    func(*Config)
		wantErr string
	}{
		{"pod CIDR outside the network", func(c *Config) {}, "is not inside a subnet of network " + engine.network},
		{"no such network", func(c *Config) { c.Network = engine.cluster + "-missing" }, "inspect network " + engine.cluster + "-missing"},
		{"no pause image", func(c *Config) {
			c.PodCIDR = netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(engine.subnet), 200, 0}), 24).String()
			c.PauseImage = engine.cluster + "/missing:1"
		}, "pause image " + engine.cluster + "/missing:1 is not on the Docker engine"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.edit(&cfg)
			rt, err := New(context.Background(), cfg)
			if err == nil {
				rt.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New() error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestFirstFreeIP(t *testing.T) {
	addrs := func(s ...string) map[netip.Addr]bool {
		m := map[netip.Addr]bool{}
		for _, a := range s {
			m[netip.MustParseAddr(a)] = true
		}
		return m
	}
	tests := []struct {
		name  string
		cidr  string
		taken map[netip.Addr]bool
		want  string // empty: none left
	}{
		{"empty range starts at .2", "10.1.2.0/24", nil, "10.1.2.2"},
		{"skips taken", "10.1.2.0/24", addrs("10.1.2.2", "10.1.2.3"), "10.1.2.4"},
		{"fills a hole", "10.1.2.0/24", addrs("10.1.2.3"), "10.1.2.2"},
		{"last before broadcast", "10.1.2.0/29", addrs("10.1.2.2", "10.1.2.3", "10.1.2.4", "10.1.2.5"), "10.1.2.6"},
		{"full", "10.1.2.0/29", addrs("10.1.2.2", "10.1.2.3", "10.1.2.4", "10.1.2.5", "10.1.2.6"), ""},
		{"crosses a byte", "10.1.0.0/16", nil, "10.1.0.2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := firstFreeIP(netip.MustParsePrefix(tt.cidr), tt.taken)
			if tt.want == "" {
				if err == nil || !strings.Contains(err.Error(), "no IP left in pod CIDR "+tt.cidr) {
					t.Fatalf("firstFreeIP() = %v, %v; want a no-IP-left error", got, err)
				}
				return
			}
			if err != nil || got.String() != tt.want {
				t.Fatalf("firstFreeIP() = %v, %v; want %s", got, err, tt.want)
			}
		})
	}
	if got := lastAddr(netip.MustParsePrefix("10.1.0.0/16")); got.String() != "10.1.255.255" {
		t.Errorf("lastAddr(10.1.0.0/16) = %s", got)
	}
}

// TestResolvConf checks a pod's resolv.conf against the kubelet's for
// dnsPolicy ClusterFirst in namespace ns.
func TestResolvConf(t *testing.T) {
	got := resolvConf("10.96.0.10", "shop")
	want := "search shop.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n"
	if got != want {
		t.Errorf("resolvConf() = %q, want %q", got, want)
	}
}
