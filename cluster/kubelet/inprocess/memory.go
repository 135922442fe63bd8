package inprocess

import (
	"fmt"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/resource"
)

// nodeMemory is the memory the node's containers have allocated together,
// bounded by the node's capacity: the in-process twin of the node running
// out of memory, where the kernel's OOM killer ends a process.
type nodeMemory struct {
	mu       sync.Mutex
	capacity int64
	used     int64
}

// containerMemory is one container's memory accounter: the twin of its
// cgroup's memory.max. The app asks it before every allocation.
type containerMemory struct {
	node  *nodeMemory
	limit int64 // 0: no limit of its own

	mu   sync.Mutex
	used int64
	// oomKilled is set when an allocation was refused.
	oomKilled atomic.Bool
}

// Allocate grants n more bytes, or refuses them when the container would
// pass its limit or the node its capacity; the app then stops as
// OOM-killed.
func (m *containerMemory) Allocate(n int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.limit > 0 && m.used+n > m.limit {
		m.oomKilled.Store(true)
		return fmt.Errorf("memory limit of %s reached", quantity(m.limit))
	}
	m.node.mu.Lock()
	defer m.node.mu.Unlock()
	if m.node.used+n > m.node.capacity {
		m.oomKilled.Store(true)
		return fmt.Errorf("node out of memory: its %s are allocated", quantity(m.node.capacity))
	}
	m.node.used += n
	m.used += n
	return nil
}

// release gives the container's memory back to the node once it exited.
func (m *containerMemory) release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.node.mu.Lock()
	defer m.node.mu.Unlock()
	m.node.used -= m.used
	m.used = 0
}

func quantity(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}
