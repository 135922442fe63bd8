package local

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/etcd/fault"
)

// echoServer accepts connections and echoes what it reads.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func newTestGate(t *testing.T, addr string) (*netGate, *fault.Table) {
	faults := fault.NewTable()
	g := newNetGate("worker-1", faults, func(a string) (string, bool) {
		return "master-1", a == addr
	})
	t.Cleanup(g.kill)
	return g, faults
}

func roundTrip(c net.Conn) error {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("x")); err != nil {
		return err
	}
	buf := make([]byte, 1)
	_, err := io.ReadFull(c, buf)
	return err
}

func TestNetGatePartitionBreaksAndRefuses(t *testing.T) {
	addr := echoServer(t)
	g, faults := newTestGate(t, addr)
	c, err := g.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(c); err != nil {
		t.Fatalf("healthy round trip: %v", err)
	}
	faults.Partition([]string{"worker-1"}, []string{"master-1"})
	if err := roundTrip(c); err == nil {
		t.Fatal("round trip across a partition succeeded")
	}
	if _, err := g.DialContext(context.Background(), "tcp", addr); !errors.Is(err, errNetworkUnreachable) {
		t.Fatalf("dial across a partition: %v, want network unreachable", err)
	}
	faults.Heal()
	c2, err := g.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatalf("dial after heal: %v", err)
	}
	if err := roundTrip(c2); err != nil {
		t.Fatalf("round trip after heal: %v", err)
	}
}

func TestNetGatePauseBlocksUntilResume(t *testing.T) {
	addr := echoServer(t)
	g, _ := newTestGate(t, addr)
	c, err := g.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	g.pause()
	done := make(chan error, 1)
	go func() { done <- roundTrip(c) }()
	select {
	case err := <-done:
		t.Fatalf("round trip finished while paused: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	g.resume()
	if err := <-done; err != nil {
		t.Fatalf("round trip after resume: %v", err)
	}
}

func TestNetGateKillResets(t *testing.T) {
	addr := echoServer(t)
	g, _ := newTestGate(t, addr)
	c, err := g.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	g.pause()
	done := make(chan error, 1)
	go func() { done <- roundTrip(c) }()
	g.kill()
	if err := <-done; err == nil {
		t.Fatal("a killed component's round trip succeeded")
	}
	if _, err := g.DialContext(context.Background(), "tcp", addr); err == nil {
		t.Fatal("a killed component could dial")
	}
}
