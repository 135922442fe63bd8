package allocator

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
)

// The NodePort range kube-apiserver uses when --service-node-port-range is
// not given: 30000-32767.
const (
	// DefaultNodePortBase is the first port of the default range.
	DefaultNodePortBase = 30000
	// DefaultNodePortSize is the number of ports in the default range.
	DefaultNodePortSize = 2768
)

// portBandStep and portBandMax size the static band (KEP-3668).
const (
	portBandStep = 32
	portBandMax  = 128
)

// PortAllocator hands out NodePorts from one port range. It is safe for
// concurrent use, and any number of PortAllocators, in any number of
// processes, may share one etcd.
type PortAllocator struct {
	base, size int
	store      *rangeStore
}

// NewPortAllocator returns an allocator for the size ports starting at base
// that keeps its state under ServiceNodePortsKey.
func NewPortAllocator(cli *clientv3.Client, base, size int) (*PortAllocator, error) {
	if cli == nil {
		return nil, errors.New("new NodePort allocator: no etcd client")
	}
	if base < 1 || size < 1 || base+size-1 > 65535 {
		return nil, fmt.Errorf("invalid NodePort range: base %d, size %d: the ports must lie in 1-65535", base, size)
	}
	a := &PortAllocator{base: base, size: size}
	a.store = newRangeStore(cli, ServiceNodePortsKey, a.Range(), size,
		staticBandSize(size, portBandStep, portBandMax), ErrMismatchedPortRange)
	return a, nil
}

// Range returns the range as upstream writes it, such as "30000-32767".
func (a *PortAllocator) Range() string {
	return fmt.Sprintf("%d-%d", a.base, a.base+a.size-1)
}

// Allocate takes a free NodePort chosen at random, from the upper part of
// the range while it has room. It returns ErrFull when none is left.
func (a *PortAllocator) Allocate(ctx context.Context) (int, error) {
	offset, err := a.store.allocateNext(ctx)
	if err != nil {
		return 0, err
	}
	return a.base + offset, nil
}

// AllocateSpecific takes port. It returns an *ErrPortNotInRange when port
// is outside the range and ErrPortAllocated when it is already taken.
func (a *PortAllocator) AllocateSpecific(ctx context.Context, port int) error {
	offset, ok := a.offsetOf(port)
	if !ok {
		return &ErrPortNotInRange{ValidPorts: a.Range()}
	}
	return a.store.allocate(ctx, offset, ErrPortAllocated)
}

// Release gives port back. Releasing a port that is free or outside the
// range does nothing and is not an error, as upstream.
func (a *PortAllocator) Release(ctx context.Context, port int) error {
	offset, ok := a.offsetOf(port)
	if !ok {
		return nil
	}
	return a.store.release(ctx, offset)
}

// Used returns the allocated NodePorts in increasing order, as etcd holds
// them now.
func (a *PortAllocator) Used(ctx context.Context) ([]int, error) {
	offsets, err := a.store.used(ctx)
	if err != nil {
		return nil, err
	}
	var ports []int
	for _, offset := range offsets {
		ports = append(ports, a.base+offset)
	}
	return ports, nil
}

// Snapshot returns the RangeAllocation object as etcd holds it now, with
// metadata.resourceVersion set to the key's ModRevision (empty if nothing
// has been allocated yet).
func (a *PortAllocator) Snapshot(ctx context.Context) (*corev1.RangeAllocation, error) {
	_, obj, err := a.store.read(ctx)
	return obj, err
}

// offsetOf returns port's offset in the bitmap and whether port is in the
// range.
func (a *PortAllocator) offsetOf(port int) (int, bool) {
	offset := port - a.base
	return offset, offset >= 0 && offset < a.size
}
