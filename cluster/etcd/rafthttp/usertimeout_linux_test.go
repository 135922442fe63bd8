package rafthttp

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestStreamsGiveUpOnUnacknowledgedWrites: the connections a transport
// dials for its streams carry TCP_USER_TIMEOUT at its write timeout (5 s
// unless set), so that a stream over a link that lost its packets fails
// and is redialled instead of waiting out TCP's retransmissions; the
// snapshot connections have none, as in etcd.
func TestStreamsGiveUpOnUnacknowledgedWrites(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Nothing accepts: the kernel completes the handshakes on its own.
	defer ln.Close()
	userTimeout := func(client *http.Client) time.Duration {
		t.Helper()
		c, err := client.Transport.(*http.Transport).DialContext(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		raw, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var ms int
		var serr error
		if err := raw.Control(func(fd uintptr) {
			ms, serr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
		}); err != nil || serr != nil {
			t.Fatalf("read TCP_USER_TIMEOUT: %v %v", err, serr)
		}
		return time.Duration(ms) * time.Millisecond
	}
	for _, tt := range []struct {
		set, want time.Duration
	}{{0, 5 * time.Second}, {1500 * time.Millisecond, 1500 * time.Millisecond}} {
		tr := New(Config{ID: 1, ClusterID: 0xc1, WriteTimeout: tt.set})
		if got := userTimeout(tr.client); got != tt.want {
			t.Errorf("WriteTimeout %s: a stream's connection has TCP_USER_TIMEOUT %s, want %s", tt.set, got, tt.want)
		}
		if got := userTimeout(tr.snapshotClient); got != 0 {
			t.Errorf("a snapshot's connection has TCP_USER_TIMEOUT %s, want none", got)
		}
		tr.Stop()
	}
}
