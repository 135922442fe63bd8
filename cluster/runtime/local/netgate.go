package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/klab-dev/klab/cluster/etcd/fault"
)

// errNetworkUnreachable is what a component sees when it dials across a
// partition, as it would from a kernel with no route.
var errNetworkUnreachable = errors.New("network is unreachable")

// errProcessGone fails the connections of a killed component.
var errProcessGone = errors.New("connection reset by peer")

// netGate is the network as one in-process component sees it. Every
// connection the component opens goes through it, so the runtime can do to
// the component what the kernel and the container engine do to a real
// process:
//   - partition: dials to a node on the other side of a cut fail, and open
//     connections to it break when the cut is made (the fault table);
//   - pause: every read and write blocks until resume, as a frozen
//     process neither sends nor reads (docker pause);
//   - kill: every connection is reset.
//
// etcd members use the fault table directly in their raft transport; the
// gate serves the components that talk to the API server through
// client-go, whose transport it plugs into as rest.Config's Dial.
type netGate struct {
	node   string
	faults *fault.Table
	// nodeAt maps "host:port" to the node listening there.
	nodeAt func(addr string) (string, bool)

	mu      sync.Mutex
	paused  bool
	resumed chan struct{}
	killed  bool
	conns   map[*gatedConn]struct{}
	stop    chan struct{}
}

func newNetGate(node string, faults *fault.Table, nodeAt func(string) (string, bool)) *netGate {
	g := &netGate{node: node, faults: faults, nodeAt: nodeAt, resumed: make(chan struct{}),
		conns: map[*gatedConn]struct{}{}, stop: make(chan struct{})}
	close(g.resumed)
	go g.watchFaults()
	return g
}

// cut reports whether traffic from this node to addr is cut.
func (g *netGate) cut(addr string) bool {
	to, ok := g.nodeAt(addr)
	if !ok || to == g.node {
		return false
	}
	return g.faults.Rule(g.node, to).Cut || g.faults.Rule(to, g.node).Cut
}

// DialContext opens a connection through the gate.
func (g *netGate) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if err := g.wait(ctx); err != nil {
		return nil, err
	}
	if g.cut(addr) {
		return nil, &net.OpError{Op: "dial", Net: network, Err: errNetworkUnreachable}
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	gc := &gatedConn{Conn: c, gate: g, addr: addr}
	g.mu.Lock()
	if g.killed {
		g.mu.Unlock()
		c.Close()
		return nil, errProcessGone
	}
	g.conns[gc] = struct{}{}
	g.mu.Unlock()
	return gc, nil
}

// wait blocks while the component is paused; it fails once it is killed.
func (g *netGate) wait(ctx context.Context) error {
	g.mu.Lock()
	killed, resumed := g.killed, g.resumed
	g.mu.Unlock()
	if killed {
		return errProcessGone
	}
	select {
	case <-resumed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *netGate) pause() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.paused {
		g.paused, g.resumed = true, make(chan struct{})
	}
}

func (g *netGate) resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused {
		g.paused = false
		close(g.resumed)
	}
}

// kill resets every connection and refuses new ones; it also wakes paused
// readers and writers, which then fail.
func (g *netGate) kill() {
	g.mu.Lock()
	if g.killed {
		g.mu.Unlock()
		return
	}
	g.killed = true
	if g.paused {
		g.paused = false
		close(g.resumed)
	}
	conns := g.conns
	g.conns = map[*gatedConn]struct{}{}
	close(g.stop)
	g.mu.Unlock()
	for c := range conns {
		c.Conn.Close()
	}
}

// close releases the gate after a graceful stop: the component has closed
// its connections itself, or is about to.
func (g *netGate) close() { g.kill() }

// watchFaults breaks open connections when a partition cuts them.
func (g *netGate) watchFaults() {
	for {
		select {
		case <-g.faults.Changed():
		case <-g.stop:
			return
		}
		g.mu.Lock()
		var cut []*gatedConn
		for c := range g.conns {
			if g.cut(c.addr) {
				cut = append(cut, c)
				delete(g.conns, c)
			}
		}
		g.mu.Unlock()
		for _, c := range cut {
			c.Conn.Close()
		}
	}
}

func (g *netGate) forget(c *gatedConn) {
	g.mu.Lock()
	delete(g.conns, c)
	g.mu.Unlock()
}

// gatedConn is one connection through a gate.
type gatedConn struct {
	net.Conn
	gate *netGate
	addr string
}

func (c *gatedConn) Read(p []byte) (int, error) {
	if err := c.gate.wait(context.Background()); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	if err != nil && c.gate.cut(c.addr) {
		err = fmt.Errorf("read %s: %w", c.addr, errNetworkUnreachable)
	}
	return n, err
}

func (c *gatedConn) Write(p []byte) (int, error) {
	if err := c.gate.wait(context.Background()); err != nil {
		return 0, err
	}
	if c.gate.cut(c.addr) {
		c.Conn.Close()
		return 0, fmt.Errorf("write %s: %w", c.addr, errNetworkUnreachable)
	}
	return c.Conn.Write(p)
}

func (c *gatedConn) Close() error {
	c.gate.forget(c)
	return c.Conn.Close()
}
