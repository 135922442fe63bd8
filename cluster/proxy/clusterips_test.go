package proxy

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/klab-dev/klab/cluster/apiserver"
	"github.com/klab-dev/klab/cluster/apiserver/apiservertest"
	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// loopbackServiceCIDR puts the tests' ClusterIPs on loopback, where a
// socket can be bound to them without the local route a Docker node adds
// for the real range.
const loopbackServiceCIDR = "127.97.0.0/16"

// udpBackends are UDP servers on the lab's backend IPs sharing one port;
// each answers a datagram with its name, a colon and the datagram.
type udpBackends struct {
	port  int
	names []string
	addrs []netip.AddrPort
	conns []net.PacketConn
}

func (l *lab) startUDPBackends(n int) *udpBackends {
	l.t.Helper()
	for range 20 {
		first, err := net.ListenPacket("udp4", netip.AddrPortFrom(l.backendIP(0), 0).String())
		if err != nil {
			l.t.Fatal(err)
		}
		port := first.LocalAddr().(*net.UDPAddr).Port
		conns := []net.PacketConn{first}
		for i := 1; i < n; i++ {
			c, err := net.ListenPacket("udp4", netip.AddrPortFrom(l.backendIP(i), uint16(port)).String())
			if err != nil {
				break
			}
			conns = append(conns, c)
		}
		if len(conns) < n {
			for _, c := range conns {
				c.Close()
			}
			continue
		}
		b := &udpBackends{port: port, conns: conns}
		for i, c := range conns {
			name := fmt.Sprintf("backend-%d", i)
			b.names = append(b.names, name)
			b.addrs = append(b.addrs, netip.AddrPortFrom(l.backendIP(i), uint16(port)))
			go func() {
				buf := make([]byte, 2048)
				for {
					n, from, err := c.ReadFrom(buf)
					if err != nil {
						return
					}
					_, _ = c.WriteTo([]byte(name+":"+string(buf[:n])), from)
				}
			}()
		}
		l.t.Cleanup(func() {
			for _, c := range b.conns {
				c.Close()
			}
		})
		return b
	}
	l.t.Fatal("no UDP port free on every backend IP")
	return nil
}

// udpAsk sends msg on c and returns the answer, or an error after a
// second without one.
func udpAsk(c net.Conn, msg string) (string, error) {
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 2048)
	n, err := c.Read(buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// TestClusterIPUDP: with ServeClusterIPs, a datagram sent to a UDP
// ClusterIP:port reaches an endpoint the mode chose and the answer comes
// back from the ClusterIP (a connected socket would drop it otherwise);
// a flow keeps its endpoint while it talks, as a conntrack entry does;
// new flows spread over the endpoints; and when a flow's endpoint stops
// being ready its flow is dropped and the next datagram finds another.
func TestClusterIPUDP(t *testing.T) {
	l := newLabWith(t, 63, apiservertest.Options{Tune: func(c *apiserver.Config) { c.ServiceCIDR = loopbackServiceCIDR }})
	b := l.startUDPBackends(3)
	svc, err := l.cs.CoreV1().Services(l.ns).Create(context.Background(), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: l.ns},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "dns"},
			Ports:    []corev1.ServicePort{{Name: "dns", Port: 53, TargetPort: intstr.FromInt32(int32(b.port)), Protocol: corev1.ProtocolUDP}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !netip.MustParsePrefix(loopbackServiceCIDR).Contains(netip.MustParseAddr(svc.Spec.ClusterIP)) {
		t.Fatalf("ClusterIP %s outside %s", svc.Spec.ClusterIP, loopbackServiceCIDR)
	}
	var eps []endpoint
	for _, a := range b.addrs {
		eps = append(eps, endpoint{addr: a, node: node})
	}
	slice := l.slice(svc, eps)
	slice.Ports[0].Name = ptrTo("dns")
	slice.Ports[0].Protocol = ptrTo(corev1.ProtocolUDP)
	slice = l.createSlice(slice)

	p := l.startProxyWith(node, func(c *Config) { c.ServeClusterIPs = true })
	waitForReadyEndpoints(t, p, svc, 3)
	l.setMode(proxier.ModeIPVS, "rr")
	waitForMode(t, p, proxier.ModeIPVS)

	target := net.JoinHostPort(svc.Spec.ClusterIP, "53")
	dial := func() net.Conn {
		t.Helper()
		var c net.Conn
		// The socket opens at the sync after the Service is seen.
		waitFor(t, p, "an answer from "+target, func() bool {
			var err error
			if c, err = net.Dial("udp4", target); err != nil {
				return false
			}
			if _, err := udpAsk(c, "hello"); err != nil {
				c.Close()
				return false
			}
			return true
		})
		t.Cleanup(func() { c.Close() })
		return c
	}
	backendOf := func(answer string) string { name, _, _ := strings.Cut(answer, ":"); return name }

	// One flow keeps its endpoint.
	c := dial()
	first, err := udpAsk(c, "q0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(first, ":q0") {
		t.Fatalf("answer %q does not echo q0", first)
	}
	for i := 1; i <= 5; i++ {
		got, err := udpAsk(c, fmt.Sprintf("q%d", i))
		if err != nil {
			t.Fatalf("datagram %d of the flow: %v", i, err)
		}
		if backendOf(got) != backendOf(first) {
			t.Fatalf("datagram %d of one flow reached %s, the flow began on %s", i, backendOf(got), backendOf(first))
		}
	}

	// New flows spread: ipvs rr gives every endpoint one of three new
	// flows in turn.
	seen := map[string]bool{}
	for range 6 {
		got, err := udpAsk(dial(), "x")
		if err != nil {
			t.Fatal(err)
		}
		seen[backendOf(got)] = true
	}
	if len(seen) != 3 {
		t.Errorf("six new flows reached %v; rr over 3 endpoints reaches all three", seen)
	}

	// The flow's endpoint stops being ready: its flow is dropped, and the
	// same client socket is answered by another endpoint.
	was := backendOf(first)
	for i, name := range b.names {
		if name == was {
			slice.Endpoints[i].Conditions.Ready = ptrTo(false)
			slice.Endpoints[i].Conditions.Serving = ptrTo(false)
		}
	}
	l.updateSlice(slice)
	waitForReadyEndpoints(t, p, svc, 2)
	waitFor(t, p, "the flow to move off "+was, func() bool {
		got, err := udpAsk(c, "again")
		return err == nil && backendOf(got) != was
	})
}
