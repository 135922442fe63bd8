package local

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/klab-dev/klab/cluster/proxy"
)

// podDial is how a pod of node connects, for the network tools of klab's
// shell (wget, curl, nslookup): from the pod's own address, as a
// container's process does. Pods and nodes of the local runtime live on
// loopback addresses, which it dials directly; any other address (a
// ClusterIP) is what the node's kube-proxy catches in a real cluster, so it
// goes through this node's kube-proxy, entering its emulated data path by
// HTTP CONNECT as traffic from the pod.
//
// That data path carries TCP only. A resolver that asks for UDP (DNS to the
// kube-dns Service's 53/UDP) gets the TCP stream to the same address and
// port instead, which lands on the Service's dns-tcp port: Go's resolver,
// given a stream, speaks DNS over TCP on it, so the query reaches the
// cluster DNS through kube-proxy's rules all the same.
func (r *Runtime) podDial(node string) func(ctx context.Context, source netip.Addr, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, source netip.Addr, network, addr string) (net.Conn, error) {
		target, err := netip.ParseAddrPort(addr)
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
		if target.Addr().IsLoopback() {
			return dialFrom(ctx, source, network, addr)
		}
		r.mu.Lock()
		n, ok := r.nodes[node]
		r.mu.Unlock()
		proxyAddr := n.HostAddr("proxy")
		if !ok || proxyAddr == "" {
			return nil, fmt.Errorf("dial %s %s: node %s runs no kube-proxy to reach it", network, addr, node)
		}
		return connectVia(ctx, source, proxyAddr, target)
	}
}

// dialFrom dials addr from source (the pod's address; any when invalid).
func dialFrom(ctx context.Context, source netip.Addr, network, addr string) (net.Conn, error) {
	var d net.Dialer
	if source.IsValid() {
		switch {
		case strings.HasPrefix(network, "udp"):
			d.LocalAddr = &net.UDPAddr{IP: source.AsSlice()}
		default:
			d.LocalAddr = &net.TCPAddr{IP: source.AsSlice()}
		}
	}
	return d.DialContext(ctx, network, addr)
}

// connectVia opens a connection to target through the kube-proxy at
// proxyAddr, as traffic from source.
func connectVia(ctx context.Context, source netip.Addr, proxyAddr string, target netip.AddrPort) (net.Conn, error) {
	conn, err := dialFrom(ctx, source, "tcp", proxyAddr)
	if err != nil {
		return nil, fmt.Errorf("dial %s through kube-proxy %s: %w", target, proxyAddr, err)
	}
	if deadline, ok := ctx.Deadline(); ok {
		conn.SetDeadline(deadline)
	}
	req := "CONNECT " + target.String() + " HTTP/1.1\r\nHost: " + target.String() + "\r\n"
	if source.IsValid() {
		req += proxy.HeaderClientIP + ": " + source.String() + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		conn.Close()
		return nil, fmt.Errorf("dial %s through kube-proxy %s: %w", target, proxyAddr, err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("dial %s through kube-proxy %s: %w", target, proxyAddr, err)
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		conn.Close()
		// What the kernel would say: nothing answers at that address.
		return nil, fmt.Errorf("dial tcp %s: connection refused (kube-proxy: %s)", target, strings.TrimSpace(string(msg)))
	}
	conn.SetDeadline(time.Time{})
	return &bufferedConn{Conn: conn, r: br}, nil
}

// bufferedConn reads what the CONNECT response's reader already holds
// before the connection.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
