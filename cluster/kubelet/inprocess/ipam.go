package inprocess

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"

	"github.com/klab-dev/klab/cluster/app"
)

// ipPool hands out a node's pod IPs. Like the host-local IPAM plugin it
// continues from the address it gave out last, so a released address is
// reused only once the others were used: a client still talking to a
// deleted pod's IP does not reach its successor by surprise.
type ipPool struct {
	cidr  netip.Prefix
	first uint32 // the range's network address
	size  uint32 // addresses in the range
	// bindable checks an address before it is handed out.
	bindable func(ip string) error

	mu    sync.Mutex
	next  uint32 // offset to try first
	inUse map[uint32]bool
}

// newIPPool parses an IPv4 pod CIDR. The network address, the first host
// address (a bridge's gateway on a real node) and the broadcast address are
// never handed out.
func newIPPool(cidr string) (*ipPool, error) {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("parse pod CIDR %q: %w", cidr, err)
	}
	prefix = prefix.Masked()
	if !prefix.Addr().Is4() {
		return nil, fmt.Errorf("pod CIDR %s: only IPv4 ranges are supported", cidr)
	}
	if prefix.Bits() > 29 {
		return nil, fmt.Errorf("pod CIDR %s is too small: want /29 or larger", cidr)
	}
	a := prefix.Addr().As4()
	return &ipPool{
		cidr:     prefix,
		first:    binary.BigEndian.Uint32(a[:]),
		size:     1 << (32 - prefix.Bits()),
		bindable: checkBindable,
		next:     2,
		inUse:    map[uint32]bool{},
	}, nil
}

// allocate returns the next free, bindable address.
func (p *ipPool) allocate() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	hosts := p.size - 3 // offsets 2 to size-2
	var lastErr error
	for i := uint32(0); i < hosts; i++ {
		off := 2 + (p.next-2+i)%hosts
		if p.inUse[off] {
			continue
		}
		ip := p.addr(off)
		if err := p.bindable(ip); err != nil {
			lastErr = err
			continue
		}
		p.inUse[off] = true
		p.next = off + 1
		return ip, nil
	}
	if lastErr != nil {
		return "", fmt.Errorf("no usable IP left in pod CIDR %s (%d in use): %w", p.cidr, len(p.inUse), lastErr)
	}
	return "", fmt.Errorf("no IP left in pod CIDR %s: all %d are in use", p.cidr, len(p.inUse))
}

// release returns an address to the pool.
func (p *ipPool) release(ip string) {
	addr, err := netip.ParseAddr(ip)
	if err != nil || !p.cidr.Contains(addr) {
		return
	}
	a := addr.As4()
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.inUse, binary.BigEndian.Uint32(a[:])-p.first)
}

func (p *ipPool) addr(off uint32) string {
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], p.first+off)
	return netip.AddrFrom4(a).String()
}

// checkBindable verifies that a pod could listen on ip: that the address is
// local (on Linux, all of 127.0.0.0/8 is) and that nothing else on the
// machine holds the app's default port on it.
func checkBindable(ip string) error {
	for _, port := range []int{0, app.DefaultPort} {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			var opErr *net.OpError
			if errors.As(err, &opErr) {
				return fmt.Errorf("address %s is not usable: %w", ip, opErr.Err)
			}
			return fmt.Errorf("address %s is not usable: %w", ip, err)
		}
		l.Close()
	}
	return nil
}
