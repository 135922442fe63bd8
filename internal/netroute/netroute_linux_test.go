package netroute

import (
	"errors"
	"net"
	"net/netip"
	"runtime"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// inNewNetns runs f on a thread of its own in a new, empty network
// namespace, so that the test never touches the machine's routes. The
// thread stays locked, so the runtime ends it with the goroutine. It skips
// where the test may not make a namespace (no CAP_SYS_ADMIN).
func inNewNetns(t *testing.T, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			done <- errSkip{err}
			return
		}
		done <- f()
	}()
	err := <-done
	var skip errSkip
	if errors.As(err, &skip) {
		t.Skipf("cannot make a network namespace: %v", skip.err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

type errSkip struct{ err error }

func (e errSkip) Error() string { return e.err.Error() }

func TestReplaceLocal(t *testing.T) {
	inNewNetns(t, func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		if err := netlink.LinkSetUp(lo); err != nil {
			return err
		}
		svc := netip.MustParsePrefix("10.96.0.0/12")
		// Before: nothing binds a ClusterIP.
		if c, err := net.ListenPacket("udp4", "10.96.0.10:53"); err == nil {
			c.Close()
			return errors.New("bound 10.96.0.10 before the range was local")
		}
		for range 2 { // replacing twice is no error
			if err := ReplaceLocal(svc); err != nil {
				return err
			}
		}
		if _, local, err := Lookup(netip.MustParseAddr("10.100.3.4")); err != nil || !local {
			return errors.New("10.100.3.4 is not local after ReplaceLocal")
		}
		c, err := net.ListenPacket("udp4", "10.96.0.10:53")
		if err != nil {
			return err
		}
		c.Close()
		return nil
	})
}

func TestReplaceVia(t *testing.T) {
	inNewNetns(t, func() error {
		// A veth pair, as Docker gives a container its eth0.
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth0"}, PeerName: "peer0"}
		if err := netlink.LinkAdd(veth); err != nil {
			return errSkip{err}
		}
		peer, err := netlink.LinkByName("peer0")
		if err != nil {
			return err
		}
		if err := netlink.LinkSetUp(peer); err != nil {
			return err
		}
		addr, err := netlink.ParseAddr("192.0.2.5/24")
		if err != nil {
			return err
		}
		if err := netlink.AddrAdd(veth, addr); err != nil {
			return err
		}
		if err := netlink.LinkSetUp(veth); err != nil {
			return err
		}
		svc := netip.MustParsePrefix("10.96.0.0/12")
		if err := ReplaceVia(svc, netip.MustParseAddr("192.0.2.1")); err != nil {
			return err
		}
		// Again, through another node: the route is replaced.
		node := netip.MustParseAddr("192.0.2.2")
		if err := ReplaceVia(svc, node); err != nil {
			return err
		}
		gw, local, err := Lookup(netip.MustParseAddr("10.96.0.10"))
		if err != nil {
			return err
		}
		if gw != node || local {
			return errors.New("10.96.0.10 goes via " + gw.String() + ", want " + node.String())
		}
		// A gateway on no link of the namespace is refused.
		if err := ReplaceVia(svc, netip.MustParseAddr("198.51.100.1")); err == nil {
			return errors.New("a route via an unreachable gateway was accepted")
		}
		return nil
	})
}
