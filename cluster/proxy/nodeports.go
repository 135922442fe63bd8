package proxy

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// acceptRetry is the pause after a failed Accept that is not the
// listener's end (too many open files, say), as net/http backs off.
const acceptRetry = 50 * time.Millisecond

// nodePortListeners keeps one TCP listener per NodePort of the last sync,
// on the NodePort address: the lab's stand-in for the packets a real node
// receives on its NodePorts.
type nodePortListeners struct {
	p *Proxy

	mu     sync.Mutex
	closed bool
	open   map[int]net.Listener
	errs   map[int]string
}

func newNodePortListeners(p *Proxy) *nodePortListeners {
	return &nodePortListeners{p: p, open: make(map[int]net.Listener), errs: make(map[int]string)}
}

// reconcile closes the listeners of NodePorts that are gone and opens the
// missing ones. A port that cannot be opened is reported once per distinct
// error and tried again at the next sync.
func (n *nodePortListeners) reconcile(rt *routeTable) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	for port, ln := range n.open {
		if _, ok := rt.byNodePort[port]; !ok {
			ln.Close()
			delete(n.open, port)
		}
	}
	for port := range n.errs {
		if _, ok := rt.byNodePort[port]; !ok {
			delete(n.errs, port)
		}
	}
	for _, port := range slices.Sorted(maps.Keys(rt.byNodePort)) {
		if _, ok := n.open[port]; ok {
			continue
		}
		addr := netip.AddrPortFrom(n.p.nodePortAddr, uint16(port)).String()
		var lc net.ListenConfig
		ln, err := lc.Listen(n.p.ctx, "tcp4", addr)
		if err != nil {
			msg := err.Error()
			if n.errs[port] != msg {
				n.errs[port] = msg
				n.p.log.Warn("cannot open NodePort", "port", port, "err", err)
				n.p.hub.Publish(Event{
					Kind: EventNodePortError, Mode: n.p.current().mode.Name(), NodePort: port,
					Message: fmt.Sprintf("NodePort %d of %s: %v", port, rt.byNodePort[port], err),
				})
			}
			continue
		}
		delete(n.errs, port)
		n.open[port] = ln
		if !n.p.life.Go(func() { n.p.acceptNodePort(port, ln) }) {
			ln.Close()
			delete(n.open, port)
		}
	}
}

// closeAll closes every listener; reconcile opens none afterwards.
func (n *nodePortListeners) closeAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	for port, ln := range n.open {
		ln.Close()
		delete(n.open, port)
	}
}

// listening returns the NodePorts open now, sorted, and the errors of
// those that could not be opened.
func (n *nodePortListeners) listening() ([]int, map[int]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ports := slices.Sorted(maps.Keys(n.open))
	if ports == nil {
		ports = []int{} // JSON [] rather than null
	}
	return ports, maps.Clone(n.errs)
}

// acceptNodePort serves one NodePort listener until it is closed.
func (p *Proxy) acceptNodePort(port int, ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || p.ctx.Err() != nil {
				return
			}
			p.log.Warn("NodePort accept failed", "port", port, "err", err)
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
			p.serveNodePort(port, c)
		}()
	}
}

// serveNodePort forwards one connection that arrived on a NodePort. The
// service is the one holding the port now, which may have changed since
// the connection was accepted; a connection that reaches no endpoint is
// reset, as a refused one would be.
func (p *Proxy) serveNodePort(port int, client net.Conn) {
	svc, ok := p.routes.Load().byNodePort[port]
	p.forward(client, svc, ok, viaNodePort, "port", port)
}

// forward splices an accepted TCP connection to the endpoint the mode
// picks for svc (found: the address served one when the connection came),
// the one path of NodePort and ClusterIP connections; a connection that
// reaches no endpoint is reset, as a refused one would be. where names the
// address it came to, for the log.
func (p *Proxy) forward(client net.Conn, svc proxier.ServicePortName, found bool, via proxier.EntryKind, where string, at any) {
	if !p.conns.add(client) {
		return
	}
	defer p.conns.remove(client)
	if !found {
		reset(client)
		return
	}
	b, err := p.connect(svc, via, remoteIP(client.RemoteAddr()))
	if err != nil {
		p.log.Debug("connection failed", where, at, "via", via, "service", svc, "err", err)
		reset(client)
		return
	}
	defer b.release()
	if !p.conns.add(b.conn) {
		b.conn.Close()
		client.Close()
		return
	}
	defer p.conns.remove(b.conn)
	splice(client, client, b.conn)
}
