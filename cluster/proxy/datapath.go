package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// dialTimeout bounds the one dial of the modes that do not retry: a kernel
// gives up on a SYN to a silent endpoint after about this long at its
// first retransmissions.
const dialTimeout = 2 * time.Second

const (
	viaNodePort  = proxier.ViaNodePort
	viaClusterIP = proxier.ViaClusterIP
)

// connStats counts the connections the data path handled.
type connStats struct {
	total, failed, retried atomic.Uint64
}

// backend is an open connection to the endpoint a mode chose.
type backend struct {
	conn net.Conn
	ep   proxier.Endpoint
	mode string
	// release tells the mode the connection ended (ipvs counts them).
	release func()
}

// dataPathError is a connection the mode could not deliver.
type dataPathError struct {
	mode     string
	endpoint string // the endpoint that failed, when one was chosen
	err      error
	hint     string // what the mode does about it, for the lab
}

func (e *dataPathError) Error() string {
	if e.hint == "" {
		return e.err.Error()
	}
	return e.err.Error() + "; " + e.hint
}

func (e *dataPathError) Unwrap() error { return e.err }

// connect asks the running mode for an endpoint for one new connection
// and dials it. Userspace tries further endpoints when a dial fails, as its
// proxy process does; the other modes send the connection to the endpoint
// their rules chose and nowhere else.
func (p *Proxy) connect(svc proxier.ServicePortName, via proxier.EntryKind, clientIP string) (*backend, error) {
	p.stats.total.Add(1)
	b, err := p.connectVia(p.acquire(), svc, via, clientIP)
	if err != nil {
		p.stats.failed.Add(1)
	}
	return b, err
}

// connectVia picks from g, which the caller acquired; it releases g once
// the mode has answered.
func (p *Proxy) connectVia(g *generation, svc proxier.ServicePortName, via proxier.EntryKind, clientIP string) (*backend, error) {
	return p.connectNetwork(g, "tcp", svc, via, clientIP)
}

// connectNetwork is connectVia for a network of net.Dial: "tcp", or "udp"
// for the first datagram of a UDP flow.
func (p *Proxy) connectNetwork(g *generation, network string, svc proxier.ServicePortName, via proxier.EntryKind, clientIP string) (*backend, error) {
	name := g.mode.Name()
	if us, ok := g.mode.(*proxier.Userspace); ok {
		attempts := 0
		var conn net.Conn
		ep, err := us.Connect(svc, clientIP, via, func(ep proxier.Endpoint, timeout time.Duration) error {
			attempts++
			c, err := p.dialEndpoint(network, ep, timeout)
			conn = c
			return err
		})
		g.selecting.Done()
		if attempts > 1 {
			p.stats.retried.Add(1)
		}
		if err != nil {
			hint := pickHint(name, err)
			if attempts > 0 {
				hint = fmt.Sprintf("userspace tried %d endpoints", attempts)
			}
			return nil, &dataPathError{mode: name, err: err, hint: hint}
		}
		return &backend{conn: conn, ep: ep, mode: name, release: func() {}}, nil
	}

	ep, err := g.mode.Pick(svc, clientIP, via, nil)
	// IPVS counts a connection from the moment it schedules it, so
	// connections opening at once already spread by lc, sed and nq.
	tracker, _ := g.mode.(proxier.ConnectionTracker)
	if err == nil && tracker != nil {
		tracker.Connected(svc, via, ep)
	}
	g.selecting.Done()
	if err != nil {
		return nil, &dataPathError{mode: name, err: err, hint: pickHint(name, err)}
	}
	release := func() {}
	if tracker != nil {
		release = func() { tracker.Disconnected(svc, via, ep) }
	}
	conn, err := p.dialEndpoint(network, ep, dialTimeout)
	if err != nil {
		release()
		return nil, &dataPathError{mode: name, endpoint: ep.String(), err: err, hint: name + " does not retry"}
	}
	return &backend{conn: conn, ep: ep, mode: name, release: release}, nil
}

// pickHint says what a real node would do with a connection the mode has
// no endpoint for.
func pickHint(mode string, err error) string {
	switch {
	case errors.Is(err, proxier.ErrNoEndpoints) && mode == proxier.ModeIPVS:
		return "ipvs has no real server: the client gets ICMP port unreachable"
	case errors.Is(err, proxier.ErrNoEndpoints):
		return mode + " rejects the connection: the client sees connection refused"
	case errors.Is(err, proxier.ErrNoLocalEndpoints):
		return mode + " drops the packet: the client would time out"
	}
	return ""
}

// dialEndpoint opens a connection to ep within timeout.
func (p *Proxy) dialEndpoint(network string, ep proxier.Endpoint, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(p.ctx, timeout)
	defer cancel()
	return p.cfg.Dial(ctx, network, ep.String())
}

// splice copies both ways between a client and its backend until both
// directions end. fromClient reads the client, including any bytes
// already buffered from it. A direction that ends cleanly half-closes its
// destination, so request-then-shutdown protocols work; one that fails
// closes both connections, so the other direction ends too.
func splice(client net.Conn, fromClient io.Reader, backend net.Conn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		pipe(backend, fromClient, client)
	}()
	pipe(client, backend, backend)
	<-done
	client.Close()
	backend.Close()
}

func pipe(dst net.Conn, src io.Reader, srcConn net.Conn) {
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		srcConn.Close()
		return
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() == nil {
			return
		}
	}
	dst.Close()
}

// reset closes c with an RST rather than a FIN, as a host does for a
// connection nobody accepts.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

// remoteIP returns the IP of a connection's remote address as text.
func remoteIP(a net.Addr) string { return remoteIPString(a.String()) }

// connSet keeps the connections the data path has open, so Stop can cut
// them, and counts the goroutines serving them, so Stop can wait for them.
type connSet struct {
	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

func newConnSet() *connSet { return &connSet{conns: make(map[net.Conn]struct{})} }

// begin registers a goroutine that serves a connection; false once the
// set is closed. Each true begin needs an end.
func (s *connSet) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

func (s *connSet) end() { s.wg.Done() }

// add registers c to be closed at shutdown; once the set is closed it
// closes c and returns false.
func (s *connSet) add(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *connSet) remove(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
}

// closeAll closes every registered connection and refuses new ones.
func (s *connSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for c := range s.conns {
		c.Close()
		delete(s.conns, c)
	}
}

// wait returns once every serving goroutine has ended.
func (s *connSet) wait() { s.wg.Wait() }
