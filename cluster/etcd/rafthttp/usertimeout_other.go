//go:build !linux

package rafthttp

import (
	"syscall"
	"time"
)

// unackedTimeout is Linux's TCP_USER_TIMEOUT; elsewhere a stream on a
// dead link fails when the system's own retransmissions give up.
func unackedTimeout(time.Duration) func(network, address string, c syscall.RawConn) error {
	return nil
}
