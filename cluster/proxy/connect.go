package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"

	"github.com/klab-dev/klab/cluster/proxy/proxier"
)

// Headers of the CONNECT entrance.
const (
	// HeaderClientIP, on a CONNECT request, makes the connection count as
	// coming from that IPv4 address instead of the CONNECT connection's own:
	// a lab affordance so traffic can come "from" a pod (inside the pod
	// CIDR, hence local to the node) or from another node, which matters
	// to traffic policies, session affinity and the sh scheduler.
	HeaderClientIP = "Klab-Client-IP"
	// HeaderProxyMode, HeaderEndpoint and HeaderNode, on the response, say
	// which mode chose, which endpoint ("ip:port") it chose, and which
	// node's proxy answered.
	HeaderProxyMode = "Klab-Proxy-Mode"
	HeaderEndpoint  = "Klab-Endpoint"
	HeaderNode      = "Klab-Node"
)

// ServeHTTP serves the debug endpoints and, for CONNECT, the lab's
// entrance to the data path.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.serveConnect(w, r)
		return
	}
	p.mux.ServeHTTP(w, r)
}

// serveConnect handles "CONNECT ip:port". NodeIP (or the NodePort address)
// with a NodePort enters as NodePort traffic; a ClusterIP and port enters
// as ClusterIP traffic, as from a process on this node. On success the
// connection is spliced to the endpoint the mode chose.
func (p *Proxy) serveConnect(w http.ResponseWriter, r *http.Request) {
	w.Header().Set(HeaderNode, p.cfg.NodeName)
	target, err := netip.ParseAddrPort(r.Host)
	if err != nil || !target.Addr().Is4() {
		connectError(w, http.StatusBadRequest, fmt.Sprintf("CONNECT target %q is not an IPv4 ip:port", r.Host))
		return
	}
	clientIP := remoteIPString(r.RemoteAddr)
	if v := r.Header.Get(HeaderClientIP); v != "" {
		a, err := netip.ParseAddr(v)
		if err != nil || !a.Is4() {
			connectError(w, http.StatusBadRequest, fmt.Sprintf("%s %q is not an IPv4 address", HeaderClientIP, v))
			return
		}
		clientIP = a.String()
	}
	svc, via, ok := p.route(target)
	if !ok {
		connectError(w, http.StatusNotFound, fmt.Sprintf("no service at %s on node %s", target, p.cfg.NodeName))
		return
	}
	if !p.conns.begin() {
		connectError(w, http.StatusServiceUnavailable, "kube-proxy is stopping")
		return
	}
	defer p.conns.end()

	b, err := p.connect(svc, via, clientIP)
	if err != nil {
		var dpe *dataPathError
		if errors.As(err, &dpe) {
			w.Header().Set(HeaderProxyMode, dpe.mode)
			if dpe.endpoint != "" {
				w.Header().Set(HeaderEndpoint, dpe.endpoint)
			}
		}
		connectError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	defer b.release()
	hj, ok := w.(http.Hijacker)
	if !ok {
		b.conn.Close()
		connectError(w, http.StatusInternalServerError, "connection cannot be taken over")
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		b.conn.Close()
		return
	}
	if !p.conns.add(client) {
		b.conn.Close()
		return
	}
	defer p.conns.remove(client)
	if !p.conns.add(b.conn) {
		client.Close()
		return
	}
	defer p.conns.remove(b.conn)
	fmt.Fprintf(buf, "HTTP/1.1 200 Connection established\r\n%s: %s\r\n%s: %s\r\n%s: %s\r\n\r\n",
		HeaderProxyMode, b.mode, HeaderEndpoint, b.ep, HeaderNode, p.cfg.NodeName)
	if err := buf.Flush(); err != nil {
		client.Close()
		b.conn.Close()
		return
	}
	splice(client, readerWithBuffered(buf.Reader, client), b.conn)
}

// route finds the service port a CONNECT target names.
func (p *Proxy) route(target netip.AddrPort) (proxier.ServicePortName, proxier.EntryKind, bool) {
	rt := p.routes.Load()
	if a := target.Addr(); a == p.cfg.NodeIP || a == p.nodePortAddr {
		if svc, ok := rt.byNodePort[int(target.Port())]; ok {
			return svc, viaNodePort, true
		}
	}
	if svc, ok := rt.byClusterIP[target]; ok {
		return svc, viaClusterIP, true
	}
	return proxier.ServicePortName{}, 0, false
}

// readerWithBuffered reads what the server had already buffered from the
// client (bytes sent right behind the CONNECT request), then the client.
func readerWithBuffered(br *bufio.Reader, c net.Conn) io.Reader {
	if n := br.Buffered(); n > 0 {
		pending, _ := br.Peek(n)
		return io.MultiReader(bytes.NewReader(bytes.Clone(pending)), c)
	}
	return c
}

// connectError answers a CONNECT that goes nowhere with one line saying
// why.
func connectError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Connection", "close")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg+"\n")
}

// remoteIPString returns the IP of an "ip:port" remote address.
func remoteIPString(addr string) string {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return ""
	}
	return ap.Addr().Unmap().String()
}
