package docker

import (
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// Addressing. Each cluster's network is 10.X.0.0/16 with X derived from the
// cluster's name, so that two clusters rarely compete for one subnet (and
// the next X is tried when they do). Inside it:
//
//	10.X.0.1          the gateway (the host's side of the bridge)
//	10.X.0.2          the load balancer's node
//	10.X.0.(10+i)     master-i
//	10.X.0.(100+i)    worker-i
//	10.X.i.0/24       master-i's pods
//	10.X.(10+i).0/24  worker-i's pods
//	10.X.255.0/24     addresses Docker picks itself, for a container
//	                  someone attaches without an address
//
// Every klab container gets its address explicitly, so that a node cut off
// by a partition is reconnected where it was.
const (
	subnetFirst = 100
	subnetLast  = 250

	lbHost         = 2
	masterHostBase = 10
	workerHostBase = 100
	workerPodBase  = 10
	dynamicRange   = 255

	// MaxMasters and MaxWorkers bound the node indexes that have an
	// address and a pod range of their own.
	MaxMasters = workerPodBase - 1
	MaxWorkers = 254 - workerHostBase
)

// clusterNetwork is a cluster's Docker network: its ID, name and X, the
// second byte of its 10.X.0.0/16.
type clusterNetwork struct {
	id, name string
	x        int
}

// preferredSubnet returns the X a cluster's network tries first.
func preferredSubnet(cluster string) int {
	h := fnv.New32a()
	h.Write([]byte(cluster))
	return subnetFirst + int(h.Sum32()%(subnetLast-subnetFirst+1))
}

// subnetOf returns the subnet, gateway and Docker's own range for X.
func subnetOf(x int) (subnet, gateway, dynamic string) {
	return fmt.Sprintf("10.%d.0.0/16", x), fmt.Sprintf("10.%d.0.1", x), fmt.Sprintf("10.%d.%d.0/24", x, dynamicRange)
}

// nodeIP returns a node's address on network X.
func nodeIP(x int, role string, index int) (string, error) {
	switch {
	case role == runtime.RoleLB && index == 1:
		return fmt.Sprintf("10.%d.0.%d", x, lbHost), nil
	case role == runtime.RoleMaster && index >= 1 && index <= MaxMasters:
		return fmt.Sprintf("10.%d.0.%d", x, masterHostBase+index), nil
	case role == runtime.RoleWorker && index >= 1 && index <= MaxWorkers:
		return fmt.Sprintf("10.%d.0.%d", x, workerHostBase+index), nil
	}
	return "", fmt.Errorf("no address for %s node %d in the Docker runtime (at most %d masters, %d workers and one load balancer)", role, index, MaxMasters, MaxWorkers)
}

// podCIDR returns the range a node's pods take their addresses from on
// network X; the load balancer runs no pods and has none.
func podCIDR(x int, role string, index int) string {
	switch role {
	case runtime.RoleMaster:
		return fmt.Sprintf("10.%d.%d.0/24", x, index)
	case runtime.RoleWorker:
		return fmt.Sprintf("10.%d.%d.0/24", x, workerPodBase+index)
	}
	return ""
}

// nodeIndexAt returns the index of the node of the given role at ip on
// network X: the inverse of nodeIP, since the address is all the runtime
// records of a node's place.
func nodeIndexAt(x int, role, ip string) (int, bool) {
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is4() {
		return 0, false
	}
	b := a.As4()
	if b[0] != 10 || int(b[1]) != x || b[2] != 0 {
		return 0, false
	}
	var index int
	switch role {
	case runtime.RoleLB:
		index = int(b[3]) - lbHost + 1
	case runtime.RoleMaster:
		index = int(b[3]) - masterHostBase
	case runtime.RoleWorker:
		index = int(b[3]) - workerHostBase
	}
	if got, err := nodeIP(x, role, index); err != nil || got != ip {
		return 0, false
	}
	return index, true
}

// parseSubnet returns X from a network's "10.X.0.0/16".
func parseSubnet(subnet string) (int, bool) {
	p, err := netip.ParsePrefix(subnet)
	if err != nil || !p.Addr().Is4() || p.Bits() != 16 {
		return 0, false
	}
	b := p.Addr().As4()
	if b[0] != 10 || b[2] != 0 || b[3] != 0 {
		return 0, false
	}
	return int(b[1]), true
}

// network returns the cluster's network, creating it if create is set and
// it is missing. The result is cached: a network keeps its ID and subnet for
// its whole life.
func (r *Runtime) network(ctx context.Context, create bool) (clusterNetwork, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.net != nil {
		return *r.net, nil
	}
	n, found, err := findNetwork(ctx, r.cli, r.opts.Cluster)
	if err != nil {
		return clusterNetwork{}, err
	}
	if !found {
		if !create {
			return clusterNetwork{}, fmt.Errorf("network %s of cluster %s: %w", labels.Network(r.opts.Cluster), r.opts.Cluster, runtime.ErrNotFound)
		}
		if n, err = createNetwork(ctx, r.cli, r.opts.Cluster); err != nil {
			return clusterNetwork{}, err
		}
		r.opts.Logger.Info("network created", "network", n.name, "subnet", fmt.Sprintf("10.%d.0.0/16", n.x))
	}
	r.net = &n
	return n, nil
}

// forgetNetwork drops the cached network, once it is removed.
func (r *Runtime) forgetNetwork() {
	r.mu.Lock()
	r.net = nil
	r.mu.Unlock()
}

// findNetwork looks the cluster's network up by its labels.
func findNetwork(ctx context.Context, cli *client.Client, cluster string) (clusterNetwork, bool, error) {
	name := labels.Network(cluster)
	list, err := cli.NetworkList(ctx, network.ListOptions{Filters: filters.NewArgs(
		filters.Arg("label", labels.ClusterFilter(cluster)),
		filters.Arg("label", labels.Filter(labels.Role, labels.RoleNetwork)),
	)})
	if err != nil {
		return clusterNetwork{}, false, fmt.Errorf("list networks of cluster %s: %w", cluster, err)
	}
	for _, n := range list {
		if n.Name != name {
			continue
		}
		for _, cfg := range n.IPAM.Config {
			if x, ok := parseSubnet(cfg.Subnet); ok {
				return clusterNetwork{id: n.ID, name: n.Name, x: x}, true, nil
			}
		}
		return clusterNetwork{}, false, fmt.Errorf("network %s has no 10.X.0.0/16 subnet as klab makes them; remove the cluster and create it again", name)
	}
	return clusterNetwork{}, false, nil
}

// createNetwork makes the cluster's bridge network, on the first free
// 10.X.0.0/16 from the cluster's preferred X on.
func createNetwork(ctx context.Context, cli *client.Client, cluster string) (clusterNetwork, error) {
	name := labels.Network(cluster)
	first := preferredSubnet(cluster)
	span := subnetLast - subnetFirst + 1
	host := hostPrefixes()
	var lastErr error
	for i := range span {
		x := subnetFirst + (first-subnetFirst+i)%span
		subnet, gateway, dynamic := subnetOf(x)
		if overlapsAny(subnet, host) {
			continue
		}
		resp, err := cli.NetworkCreate(ctx, name, network.CreateOptions{
			Driver: "bridge",
			IPAM: &network.IPAM{Config: []network.IPAMConfig{{
				Subnet: subnet, Gateway: gateway, IPRange: dynamic,
			}}},
			Labels: map[string]string{labels.Cluster: cluster, labels.Role: labels.RoleNetwork},
		})
		if err == nil {
			return clusterNetwork{id: resp.ID, name: name, x: x}, nil
		}
		if cerrdefs.IsConflict(err) || strings.Contains(err.Error(), "already exists") {
			// Another klab process made it meanwhile.
			n, found, ferr := findNetwork(ctx, cli, cluster)
			if ferr == nil && found {
				return n, nil
			}
			return clusterNetwork{}, fmt.Errorf("create network %s: %w", name, err)
		}
		if !strings.Contains(err.Error(), "overlap") {
			return clusterNetwork{}, fmt.Errorf("create network %s on %s: %w", name, subnet, err)
		}
		lastErr = err
	}
	return clusterNetwork{}, fmt.Errorf("create network %s: every subnet from 10.%d.0.0/16 to 10.%d.0.0/16 is in use: %w", name, subnetFirst, subnetLast, lastErr)
}

// hostPrefixes returns the IPv4 networks of this machine's interfaces.
// Docker refuses a subnet that overlaps another Docker network, but not one
// that overlaps the machine's own (a VPN, a LAN), which the cluster's bridge
// would then hide.
func hostPrefixes() []netip.Prefix {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Prefix
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() {
			out = append(out, p.Masked())
		}
	}
	return out
}

// overlapsAny reports whether subnet overlaps one of prefixes.
func overlapsAny(subnet string, prefixes []netip.Prefix) bool {
	s := netip.MustParsePrefix(subnet)
	for _, p := range prefixes {
		if p.Overlaps(s) {
			return true
		}
	}
	return false
}
