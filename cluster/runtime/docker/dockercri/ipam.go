package dockercri

import (
	"fmt"
	"net/netip"
)

// firstFreeIP returns the lowest address of cidr, from .2 upward, that
// taken does not hold. The network address, the first host address (a
// bridge's gateway on a real node) and the broadcast address are never
// handed out, as the host-local IPAM plugin does.
//
// Unlike the in-process runtime, which hands addresses out in turn, the
// choice depends on nothing but the sandboxes Docker has, so a restarted
// kubelet makes the same choices as the one before it.
func firstFreeIP(cidr netip.Prefix, taken map[netip.Addr]bool) (netip.Addr, error) {
	broadcast := lastAddr(cidr)
	ip := cidr.Masked().Addr().Next().Next()
	for ; ip.Less(broadcast); ip = ip.Next() {
		if !taken[ip] {
			return ip, nil
		}
	}
	hosts := 1<<(32-cidr.Bits()) - 3
	return netip.Addr{}, fmt.Errorf("no IP left in pod CIDR %s: all %d pod addresses are in use", cidr, hosts)
}

// lastAddr returns the last address of an IPv4 prefix.
func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().As4()
	hostBits := 32 - p.Bits()
	for i := 3; i >= 0 && hostBits > 0; i-- {
		n := min(hostBits, 8)
		a[i] |= byte(1<<n - 1)
		hostBits -= n
	}
	return netip.AddrFrom4(a)
}
