package docker

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/klab-dev/klab/cluster/runtime"
)

func TestNodeAddressing(t *testing.T) {
	const x = 123
	tests := []struct {
		role      string
		index     int
		wantIP    string
		wantCIDR  string
		wantError bool
	}{
		{runtime.RoleLB, 1, "10.123.0.2", "", false},
		{runtime.RoleMaster, 1, "10.123.0.11", "10.123.1.0/24", false},
		{runtime.RoleMaster, MaxMasters, "10.123.0.19", "10.123.9.0/24", false},
		{runtime.RoleWorker, 1, "10.123.0.101", "10.123.11.0/24", false},
		{runtime.RoleWorker, MaxWorkers, "10.123.0.254", "10.123.164.0/24", false},
		{runtime.RoleMaster, 0, "", "", true},
		{runtime.RoleMaster, MaxMasters + 1, "", "", true},
		{runtime.RoleWorker, MaxWorkers + 1, "", "", true},
		{runtime.RoleLB, 2, "", "", true},
		{"etcd", 1, "", "", true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s-%d", tt.role, tt.index), func(t *testing.T) {
			ip, err := nodeIP(x, tt.role, tt.index)
			if (err != nil) != tt.wantError || ip != tt.wantIP {
				t.Fatalf("nodeIP = %q, %v; want %q, error %v", ip, err, tt.wantIP, tt.wantError)
			}
			if tt.wantError {
				return
			}
			if cidr := podCIDR(x, tt.role, tt.index); cidr != tt.wantCIDR {
				t.Errorf("podCIDR = %q, want %q", cidr, tt.wantCIDR)
			}
			if index, ok := nodeIndexAt(x, tt.role, ip); !ok || index != tt.index {
				t.Errorf("nodeIndexAt(%s) = %d, %v; want %d", ip, index, ok, tt.index)
			}
		})
	}
	if _, ok := nodeIndexAt(x, runtime.RoleWorker, "10.123.0.11"); ok {
		t.Error("a master's address read as a worker's")
	}
	if _, ok := nodeIndexAt(x+1, runtime.RoleMaster, "10.123.0.11"); ok {
		t.Error("an address of another network read as this one's")
	}
}

// Every node address, pod range and Docker's own range must be distinct and
// inside the network, or two containers could be given one address.
func TestAddressRangesDisjoint(t *testing.T) {
	const x = 200
	subnet, gateway, dynamic := subnetOf(x)
	net := netip.MustParsePrefix(subnet)
	var ranges []netip.Prefix
	add := func(p netip.Prefix, what string) {
		if !net.Contains(p.Addr()) {
			t.Errorf("%s %s is outside %s", what, p, subnet)
		}
		for _, q := range ranges {
			if p.Overlaps(q) {
				t.Errorf("%s %s overlaps %s", what, p, q)
			}
		}
		ranges = append(ranges, p)
	}
	// The nodes' /24 holds the gateway and every node address.
	add(netip.MustParsePrefix(fmt.Sprintf("10.%d.0.0/24", x)), "node range")
	add(netip.MustParsePrefix(dynamic), "dynamic range")
	if !netip.MustParsePrefix(fmt.Sprintf("10.%d.0.0/24", x)).Contains(netip.MustParseAddr(gateway)) {
		t.Errorf("gateway %s is not in the nodes' range", gateway)
	}
	for i := 1; i <= MaxMasters; i++ {
		add(netip.MustParsePrefix(podCIDR(x, runtime.RoleMaster, i)), "master pod range")
	}
	for i := 1; i <= MaxWorkers; i++ {
		add(netip.MustParsePrefix(podCIDR(x, runtime.RoleWorker, i)), "worker pod range")
	}
}

func TestPreferredSubnet(t *testing.T) {
	seen := map[int]bool{}
	for _, name := range []string{"klab", "demo", "lab2", "a", "klabtest-abcdef"} {
		x := preferredSubnet(name)
		if x < subnetFirst || x > subnetLast {
			t.Errorf("cluster %s: X = %d, outside [%d, %d]", name, x, subnetFirst, subnetLast)
		}
		if preferredSubnet(name) != x {
			t.Errorf("cluster %s: X changes between calls", name)
		}
		seen[x] = true
	}
	if len(seen) < 3 {
		t.Errorf("five names share %d subnets: the hash does not spread them", len(seen))
	}
}

func TestParseSubnet(t *testing.T) {
	tests := []struct {
		subnet string
		want   int
		ok     bool
	}{
		{"10.123.0.0/16", 123, true},
		{"10.123.0.0/24", 0, false},
		{"172.18.0.0/16", 0, false},
		{"10.123.1.0/16", 0, false},
		{"fd00::/64", 0, false},
		{"garbage", 0, false},
	}
	for _, tt := range tests {
		if got, ok := parseSubnet(tt.subnet); got != tt.want || ok != tt.ok {
			t.Errorf("parseSubnet(%q) = %d, %v; want %d, %v", tt.subnet, got, ok, tt.want, tt.ok)
		}
	}
}

func TestOverlapsAny(t *testing.T) {
	host := []netip.Prefix{netip.MustParsePrefix("10.150.3.0/24"), netip.MustParsePrefix("127.0.0.0/8")}
	if !overlapsAny("10.150.0.0/16", host) {
		t.Error("10.150.0.0/16 should overlap the host's 10.150.3.0/24")
	}
	if overlapsAny("10.151.0.0/16", host) {
		t.Error("10.151.0.0/16 overlaps nothing of the host's")
	}
	if !overlapsAny("10.151.0.0/16", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}) {
		t.Error("a host network holding all of 10/8 overlaps every subnet")
	}
}
