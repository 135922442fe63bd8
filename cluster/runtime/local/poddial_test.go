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
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/proxy"
)

// fakeProxy answers CONNECT as kube-proxy does: 200 and an echo of what
// follows for 10.96.0.10:53, 404 with its reason for anything else.
func fakeProxy(t *testing.T) (string, <-chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	clients := make(chan string, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				clients <- req.Header.Get(proxy.HeaderClientIP)
				if req.Host != "10.96.0.10:53" {
					body := "no service at " + req.Host + "\n"
					fmt.Fprintf(c, "HTTP/1.1 404 Not Found\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
					return
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\n")
				io.Copy(c, br)
			}()
		}
	}()
	return ln.Addr().String(), clients
}

func TestConnectVia(t *testing.T) {
	addr, clients := fakeProxy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	source := netip.MustParseAddr("127.0.0.1")
	conn, err := connectVia(ctx, source, addr, netip.MustParseAddrPort("10.96.0.10:53"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if got := <-clients; got != "127.0.0.1" {
		t.Errorf("client IP header %q, want the pod's address", got)
	}
	io.WriteString(conn, "ping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != "ping" {
		t.Errorf("through the tunnel: %q, %v", buf, err)
	}

	_, err = connectVia(ctx, source, addr, netip.MustParseAddrPort("10.96.0.99:80"))
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "no service at 10.96.0.99:80") {
		t.Errorf("no Service there: %v; want connection refused with kube-proxy's reason", err)
	}
}
