package allocator

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
)

// DefaultServiceCIDR is the service CIDR klab uses when none is given, the
// same as kubeadm's default.
const DefaultServiceCIDR = "10.96.0.0/12"

const (
	// maxCIDRBits is kube-apiserver's limit on the host bits of a service
	// CIDR: the bitmap of a bigger range would be too large to keep in etcd.
	maxCIDRBits = 20
	// maxIPv6RangeSize caps an IPv6 range, as upstream does.
	maxIPv6RangeSize = 65536
	// ipBandStep and ipBandMax size the static band (KEP-3070).
	ipBandStep = 16
	ipBandMax  = 256
)

// IPAllocator hands out ClusterIPs from one service CIDR. It is safe for
// concurrent use, and any number of IPAllocators, in any number of
// processes, may share one etcd.
type IPAllocator struct {
	prefix netip.Prefix
	// first is the address at offset 0: one past the network address.
	first netip.Addr
	// size is the number of usable addresses.
	size  int
	store *rangeStore
}

// NewIPAllocator returns an allocator for the service CIDR cidr (such as
// DefaultServiceCIDR) that keeps its state under ServiceIPsKey.
func NewIPAllocator(cli *clientv3.Client, cidr string) (*IPAllocator, error) {
	if cli == nil {
		return nil, errors.New("new ClusterIP allocator: no etcd client")
	}
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("parse service CIDR %q: %w", cidr, err)
	}
	prefix = prefix.Masked()
	addrBits := prefix.Addr().BitLen()
	hostBits := addrBits - prefix.Bits()
	if hostBits > maxCIDRBits {
		return nil, fmt.Errorf("specified --service-cluster-ip-range is too large; for %d-bit addresses, the mask must be >= %d", addrBits, addrBits-maxCIDRBits)
	}

	// As upstream's RangeSize, a /31 or /32 (/127 or /128) has no usable
	// addresses at all.
	cidrSize := 1 << hostBits
	if hostBits <= 1 {
		cidrSize = 0
	}
	var size int
	if prefix.Addr().Is4() {
		size = cidrSize - 2 // neither the network nor the broadcast address
	} else {
		size = min(cidrSize, maxIPv6RangeSize) - 1 // not the network address
	}
	size = max(size, 0)

	a := &IPAllocator{prefix: prefix, first: prefix.Addr().Next(), size: size}
	a.store = newRangeStore(cli, ServiceIPsKey, prefix.String(), size,
		staticBandSize(cidrSize, ipBandStep, ipBandMax), ErrMismatchedNetwork)
	return a, nil
}

// CIDR returns the service CIDR, such as "10.96.0.0/12".
func (a *IPAllocator) CIDR() string {
	return a.prefix.String()
}

// Allocate takes a free ClusterIP chosen at random, from the upper part of
// the range while it has room. It returns ErrFull when none is left.
func (a *IPAllocator) Allocate(ctx context.Context) (net.IP, error) {
	offset, err := a.store.allocateNext(ctx)
	if err != nil {
		return nil, err
	}
	return a.ipAt(offset), nil
}

// AllocateSpecific takes ip. It returns an *ErrNotInRange when ip is not a
// usable address of the range and ErrAllocated when ip is already taken.
func (a *IPAllocator) AllocateSpecific(ctx context.Context, ip net.IP) error {
	offset, ok := a.offsetOf(ip)
	if !ok {
		return &ErrNotInRange{IP: ip, ValidRange: a.prefix.String()}
	}
	return a.store.allocate(ctx, offset, ErrAllocated)
}

// Release gives ip back. Releasing an address that is free or not in the
// range does nothing and is not an error, as upstream.
func (a *IPAllocator) Release(ctx context.Context, ip net.IP) error {
	offset, ok := a.offsetOf(ip)
	if !ok {
		return nil
	}
	return a.store.release(ctx, offset)
}

// Used returns the allocated ClusterIPs in increasing order, as etcd holds
// them now.
func (a *IPAllocator) Used(ctx context.Context) ([]net.IP, error) {
	offsets, err := a.store.used(ctx)
	if err != nil {
		return nil, err
	}
	var ips []net.IP
	for _, offset := range offsets {
		ips = append(ips, a.ipAt(offset))
	}
	return ips, nil
}

// Snapshot returns the RangeAllocation object as etcd holds it now, with
// metadata.resourceVersion set to the key's ModRevision (empty if nothing
// has been allocated yet).
func (a *IPAllocator) Snapshot(ctx context.Context) (*corev1.RangeAllocation, error) {
	_, obj, err := a.store.read(ctx)
	return obj, err
}

// offsetOf returns ip's offset in the bitmap and whether ip is a usable
// address of the range.
func (a *IPAllocator) offsetOf(ip net.IP) (int, bool) {
	addr, ok := netip.AddrFromSlice(ip)
	if !ok {
		return 0, false
	}
	if a.prefix.Addr().Is4() {
		// net.IP keeps IPv4 addresses in 16 bytes as often as in 4.
		addr = addr.Unmap()
	}
	if !a.prefix.Contains(addr) || addr == a.prefix.Addr() {
		return 0, false
	}
	// The range has at most maxCIDRBits host bits, so the offset is the
	// difference of the low 32 bits.
	offset := int(low32(addr) - low32(a.first))
	if offset >= a.size {
		return 0, false
	}
	return offset, true
}

// ipAt returns the address at offset.
func (a *IPAllocator) ipAt(offset int) net.IP {
	raw := a.first.As16()
	low := binary.BigEndian.Uint32(raw[12:]) + uint32(offset)
	binary.BigEndian.PutUint32(raw[12:], low)
	addr := netip.AddrFrom16(raw)
	if a.first.Is4() {
		addr = addr.Unmap()
	}
	return net.IP(addr.AsSlice())
}

// low32 returns the last 32 bits of addr.
func low32(addr netip.Addr) uint32 {
	raw := addr.As16()
	return binary.BigEndian.Uint32(raw[12:])
}
