package allocator

import (
	"errors"
	"fmt"
	"net"
)

// The messages below are kube-apiserver's, word for word.
var (
	// ErrFull is returned when a range has no free IP or port left.
	ErrFull = errors.New("range is full")
	// ErrAllocated is returned when a requested ClusterIP is already taken.
	ErrAllocated = errors.New("provided IP is already allocated")
	// ErrPortAllocated is returned when a requested NodePort is already taken.
	ErrPortAllocated = errors.New("provided port is already allocated")
	// ErrMismatchedNetwork is returned when the range stored in etcd is not
	// the ClusterIP range this allocator was built for.
	ErrMismatchedNetwork = errors.New("the provided network does not match the current range")
	// ErrMismatchedPortRange is returned when the range stored in etcd is not
	// the NodePort range this allocator was built for.
	ErrMismatchedPortRange = errors.New("the provided port range does not match the current port range")
)

// ErrNotInRange is returned when a requested ClusterIP lies outside the
// usable addresses of the range (the network and, for IPv4, broadcast
// addresses are outside too). The name is upstream's.
type ErrNotInRange struct {
	// IP is the address that was asked for.
	IP net.IP
	// ValidRange is the service CIDR, such as "10.96.0.0/12".
	ValidRange string
}

func (e *ErrNotInRange) Error() string {
	return fmt.Sprintf("the provided IP (%v) is not in the valid range. The range of valid IPs is %s", e.IP, e.ValidRange)
}

// ErrPortNotInRange is returned when a requested NodePort lies outside the
// range (upstream's portallocator.ErrNotInRange).
type ErrPortNotInRange struct {
	// ValidPorts is the range as "base-last", such as "30000-32767".
	ValidPorts string
}

func (e *ErrPortNotInRange) Error() string {
	return fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %s", e.ValidPorts)
}
