package live

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

// errConnsClosed is a dial after the Feed closed.
var errConnsClosed = errors.New("the lessons feed is closed")

// conns dials the Feed's connections to the API server and closes every
// one of them when the Feed closes. Closing idle connections is not enough:
// a dial already under way when the informers stop (its TLS handshake slow
// on a loaded machine) lands in the pool after the last such close, and
// would stay there until the transport's idle timeout.
type conns struct {
	dialer net.Dialer
	mu     sync.Mutex
	closed bool
	open   map[*ownedConn]struct{}
}

func newConns() *conns {
	return &conns{
		dialer: net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
		open:   map[*ownedConn]struct{}{},
	}
}

// dial is a rest.Config's Dial.
func (c *conns) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, errConnsClosed
	}
	nc, err := c.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		nc.Close()
		return nil, errConnsClosed
	}
	oc := &ownedConn{Conn: nc, owner: c}
	c.open[oc] = struct{}{}
	return oc, nil
}

// close closes every connection dialled, and refuses new ones.
func (c *conns) close() {
	c.mu.Lock()
	c.closed = true
	open := c.open
	c.open = map[*ownedConn]struct{}{}
	c.mu.Unlock()
	for oc := range open {
		oc.Conn.Close()
	}
}

// ownedConn leaves its owner's set when it is closed.
type ownedConn struct {
	net.Conn
	owner *conns
	once  sync.Once
}

func (oc *ownedConn) Close() error {
	oc.once.Do(func() {
		oc.owner.mu.Lock()
		delete(oc.owner.open, oc)
		oc.owner.mu.Unlock()
	})
	return oc.Conn.Close()
}
