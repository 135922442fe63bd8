package proxy

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// udpFlowTimeout is how long a UDP flow keeps the endpoint it was given
// without a datagram either way: the kernel's nf_conntrack_udp_timeout
// for a flow that has seen replies (its udp_timeout_stream is longer, but
// a DNS exchange never becomes a stream).
const udpFlowTimeout = 30 * time.Second

// udpBufSize holds the largest UDP datagram.
const udpBufSize = 64 << 10

// clusterIPKey is one ClusterIP:port of one protocol.
type clusterIPKey struct {
	addr  netip.AddrPort
	proto corev1.Protocol
}

// clusterIPListeners, when Config.ServeClusterIPs is set, holds a socket
// bound to every ClusterIP:port of the last sync, TCP and UDP: the node
// makes the whole Service range local (a local route on lo), so a packet a
// pod sends to a ClusterIP arrives here with its destination intact, and a
// reply leaves from the ClusterIP, as the kernel's un-DNAT makes it. The
// endpoint is chosen by the running mode for each new connection or UDP
// flow, exactly as for NodePort and CONNECT traffic.
type clusterIPListeners struct {
	p *Proxy

	mu     sync.Mutex
	closed bool
	tcp    map[netip.AddrPort]net.Listener
	udp    map[netip.AddrPort]*udpService
	errs   map[clusterIPKey]string
}

func newClusterIPListeners(p *Proxy) *clusterIPListeners {
	return &clusterIPListeners{p: p, tcp: map[netip.AddrPort]net.Listener{}, udp: map[netip.AddrPort]*udpService{}, errs: map[clusterIPKey]string{}}
}

// reconcile closes the sockets of ClusterIP ports that are gone and opens
// the missing ones; one that cannot be opened is logged once per distinct
// error and tried again at the next sync.
func (l *clusterIPListeners) reconcile(rt *routeTable) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	for a, ln := range l.tcp {
		if _, ok := rt.byClusterIP[a]; !ok {
			ln.Close()
			delete(l.tcp, a)
		}
	}
	for a, u := range l.udp {
		if _, ok := rt.byClusterIPUDP[a]; !ok {
			u.close()
			delete(l.udp, a)
			continue
		}
		u.dropStale(rt.udpServing[a])
	}
	for k := range l.errs {
		m := rt.byClusterIP
		if k.proto == corev1.ProtocolUDP {
			m = rt.byClusterIPUDP
		}
		if _, ok := m[k.addr]; !ok {
			delete(l.errs, k)
		}
	}
	for a := range rt.byClusterIP {
		if _, ok := l.tcp[a]; ok {
			continue
		}
		var lc net.ListenConfig
		ln, err := lc.Listen(l.p.ctx, "tcp4", a.String())
		if !l.opened(clusterIPKey{a, corev1.ProtocolTCP}, err) {
			continue
		}
		l.tcp[a] = ln
		if !l.p.life.Go(func() { l.p.acceptClusterIP(a, ln) }) {
			ln.Close()
			delete(l.tcp, a)
		}
	}
	for a := range rt.byClusterIPUDP {
		if _, ok := l.udp[a]; ok {
			continue
		}
		var lc net.ListenConfig
		pc, err := lc.ListenPacket(l.p.ctx, "udp4", a.String())
		if !l.opened(clusterIPKey{a, corev1.ProtocolUDP}, err) {
			continue
		}
		u := &udpService{p: l.p, addr: a, conn: pc, flows: map[netip.AddrPort]*udpFlow{}}
		l.udp[a] = u
		if !l.p.life.Go(u.serve) {
			pc.Close()
			delete(l.udp, a)
		}
	}
}

// opened records the outcome of opening k: false (and a log line, once
// per distinct error) when err is not nil.
func (l *clusterIPListeners) opened(k clusterIPKey, err error) bool {
	if err == nil {
		delete(l.errs, k)
		return true
	}
	if msg := err.Error(); l.errs[k] != msg {
		l.errs[k] = msg
		l.p.log.Warn("cannot listen on a ClusterIP", "address", k.addr, "protocol", k.proto, "err", err)
	}
	return false
}

// closeAll closes every socket; reconcile opens none afterwards.
func (l *clusterIPListeners) closeAll() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for a, ln := range l.tcp {
		ln.Close()
		delete(l.tcp, a)
	}
	for a, u := range l.udp {
		u.close()
		delete(l.udp, a)
	}
}

// acceptClusterIP serves one ClusterIP:port TCP listener until it is
// closed.
func (p *Proxy) acceptClusterIP(addr netip.AddrPort, ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || p.ctx.Err() != nil {
				return
			}
			p.log.Warn("ClusterIP accept failed", "address", addr, "err", err)
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(acceptRetry):
			}
			continue
		}
		if !p.conns.begin() {
			c.Close()
			return
		}
		go func() {
			defer p.conns.end()
			p.serveClusterIP(addr, c)
		}()
	}
}

// serveClusterIP forwards one TCP connection to a ClusterIP to the
// endpoint the mode picks; one that reaches no endpoint is reset.
func (p *Proxy) serveClusterIP(addr netip.AddrPort, client net.Conn) {
	svc, ok := p.routes.Load().byClusterIP[addr]
	p.forward(client, svc, ok, viaClusterIP, "address", addr)
}

// udpService is the socket of one UDP ClusterIP:port and its flows: each
// client address keeps the endpoint the mode chose for its first datagram
// until it falls silent for udpFlowTimeout, as a conntrack entry does.
type udpService struct {
	p    *Proxy
	addr netip.AddrPort
	conn net.PacketConn

	mu     sync.Mutex
	closed bool
	flows  map[netip.AddrPort]*udpFlow
}

// udpFlow is one client's flow: a socket connected to its endpoint.
type udpFlow struct {
	backend *backend
	mu      sync.Mutex
	last    time.Time // when a datagram last passed, either way
}

func (f *udpFlow) touch() {
	f.mu.Lock()
	f.last = time.Now()
	f.mu.Unlock()
}

func (f *udpFlow) idle() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return time.Since(f.last)
}

// serve reads datagrams until the socket is closed.
func (u *udpService) serve() {
	buf := make([]byte, udpBufSize)
	for {
		n, from, err := u.conn.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) || u.p.ctx.Err() != nil {
				return
			}
			u.p.log.Warn("ClusterIP UDP read failed", "address", u.addr, "err", err)
			continue
		}
		client, ok := from.(*net.UDPAddr)
		if !ok {
			continue
		}
		f := u.flow(client.AddrPort())
		if f == nil {
			// No endpoint: the datagram is dropped, as the rules of
			// every mode (REJECT answers with ICMP, which a resolver
			// sees as a timeout or a refusal) leave the client waiting.
			continue
		}
		f.touch()
		if _, err := f.backend.conn.Write(buf[:n]); err != nil {
			u.p.log.Debug("ClusterIP UDP forward failed", "address", u.addr, "endpoint", f.backend.ep, "err", err)
		}
	}
}

// flow returns the client's flow, asking the mode for an endpoint when it
// has none; nil when the mode has none to give.
func (u *udpService) flow(client netip.AddrPort) *udpFlow {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return nil
	}
	if f, ok := u.flows[client]; ok {
		return f
	}
	svc, ok := u.p.routes.Load().byClusterIPUDP[u.addr]
	if !ok {
		return nil
	}
	b, err := u.p.connectUDP(svc, client.Addr().Unmap().String())
	if err != nil {
		u.p.log.Debug("ClusterIP UDP flow failed", "address", u.addr, "service", svc, "err", err)
		return nil
	}
	f := &udpFlow{backend: b, last: time.Now()}
	u.flows[client] = f
	if !u.p.conns.begin() {
		delete(u.flows, client)
		b.conn.Close()
		b.release()
		return nil
	}
	go func() {
		defer u.p.conns.end()
		u.replies(client, f)
	}()
	return f
}

// replies sends the endpoint's datagrams back to the client from the
// ClusterIP's socket, so they come from the ClusterIP, until the flow is
// idle for udpFlowTimeout or the service closes.
func (u *udpService) replies(client netip.AddrPort, f *udpFlow) {
	defer func() {
		u.mu.Lock()
		if u.flows[client] == f {
			delete(u.flows, client)
		}
		u.mu.Unlock()
		f.backend.conn.Close()
		f.backend.release()
	}()
	buf := make([]byte, udpBufSize)
	to := net.UDPAddrFromAddrPort(client)
	for {
		_ = f.backend.conn.SetReadDeadline(time.Now().Add(udpFlowTimeout))
		n, err := f.backend.conn.Read(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && f.idle() < udpFlowTimeout && u.p.ctx.Err() == nil {
				continue
			}
			return
		}
		f.touch()
		if _, err := u.conn.WriteTo(buf[:n], to); err != nil {
			u.p.log.Debug("ClusterIP UDP reply failed", "address", u.addr, "client", client, "err", err)
		}
	}
}

// dropStale ends the flows whose endpoint is no longer ready or serving,
// as upstream's kube-proxy deletes the conntrack entries of a UDP Service's
// removed endpoints: without that a client that keeps sending (a resolver
// re-asking the same source port) would talk to a dead pod until it fell
// silent.
func (u *udpService) dropStale(serving map[string]bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for client, f := range u.flows {
		if !serving[f.backend.ep.String()] {
			f.backend.conn.Close()
			delete(u.flows, client)
		}
	}
}

// close closes the socket and every flow.
func (u *udpService) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.closed = true
	u.conn.Close()
	for _, f := range u.flows {
		f.backend.conn.Close()
	}
}

// connectUDP asks the running mode for the endpoint of a new UDP flow and
// opens a socket connected to it.
func (p *Proxy) connectUDP(svc proxier.ServicePortName, clientIP string) (*backend, error) {
	p.stats.total.Add(1)
	b, err := p.connectNetwork(p.acquire(), "udp", svc, viaClusterIP, clientIP)
	if err != nil {
		p.stats.failed.Add(1)
		return nil, fmt.Errorf("udp flow to %s: %w", svc, err)
	}
	return b, nil
}
