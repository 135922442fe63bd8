package netroute

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// ReplaceVia sets the route to dst through gateway gw, on whichever
// interface the kernel finds gw on, replacing any route to dst: `ip route
// replace <dst> via <gw>`.
func ReplaceVia(dst netip.Prefix, gw netip.Addr) error {
	if !dst.Addr().Is4() || !gw.Is4() {
		return fmt.Errorf("route %s via %s: only IPv4 is supported", dst, gw)
	}
	r := &netlink.Route{Dst: ipNet(dst), Gw: net.IP(gw.AsSlice())}
	if err := netlink.RouteReplace(r); err != nil {
		return fmt.Errorf("route %s via %s: %w", dst, gw, err)
	}
	return nil
}

// ReplaceLocal makes every address of dst an address of this namespace:
// a route of type local in the local table, on lo (`ip route replace local
// <dst> dev lo table local`). A socket may then bind any of them, and a
// packet to any of them is delivered here rather than forwarded.
func ReplaceLocal(dst netip.Prefix) error {
	if !dst.Addr().Is4() {
		return fmt.Errorf("local route %s: only IPv4 is supported", dst)
	}
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("local route %s: %w", dst, err)
	}
	r := &netlink.Route{
		Dst: ipNet(dst), LinkIndex: lo.Attrs().Index,
		Type: unix.RTN_LOCAL, Table: unix.RT_TABLE_LOCAL, Scope: netlink.SCOPE_HOST,
	}
	if err := netlink.RouteReplace(r); err != nil {
		return fmt.Errorf("local route %s: %w", dst, err)
	}
	return nil
}

// Lookup returns the gateway (invalid when the destination is on-link) and
// the type of the route the kernel would use to reach dst: what a test
// checks a namespace's routing with.
func Lookup(dst netip.Addr) (gw netip.Addr, local bool, err error) {
	routes, err := netlink.RouteGet(net.IP(dst.AsSlice()))
	if err != nil {
		return netip.Addr{}, false, fmt.Errorf("route to %s: %w", dst, err)
	}
	if len(routes) == 0 {
		return netip.Addr{}, false, fmt.Errorf("route to %s: none", dst)
	}
	if g, ok := netip.AddrFromSlice(routes[0].Gw); ok {
		gw = g.Unmap()
	}
	return gw, routes[0].Type == unix.RTN_LOCAL, nil
}

func ipNet(p netip.Prefix) *net.IPNet {
	p = p.Masked()
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
