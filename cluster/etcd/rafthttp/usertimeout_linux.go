package rafthttp

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// unackedTimeout returns a dialer's Control that sets TCP_USER_TIMEOUT on
// the socket: once data sent on it has gone unacknowledged for d, the
// kernel gives up on the connection and the stream's write fails.
func unackedTimeout(d time.Duration) func(network, address string, c syscall.RawConn) error {
	ms := int(d / time.Millisecond)
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, ms)
		}); err != nil {
			return err
		}
		return serr
	}
}
