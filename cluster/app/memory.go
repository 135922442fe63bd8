package app

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
)

// allocationChunk is how much memory the app allocates at a time, so that
// it crosses a limit the way a growing program does, one step past it,
// rather than in a single jump that the limit might refuse whole.
const allocationChunk = 1 << 20

// pageSize is how far apart the app writes into allocated memory: one write
// per page makes the kernel back every page, so a cgroup counts all of it.
const pageSize = 4096

// errOOMKilled reports that the memory accounter refused an allocation.
type errOOMKilled struct{ cause error }

func (e errOOMKilled) Error() string { return fmt.Sprintf("out of memory: %v", e.cause) }
func (e errOOMKilled) Unwrap() error { return e.cause }

// hog holds the memory the app was told to allocate, until it exits.
type hog struct {
	accounter MemoryAccounter

	mu     sync.Mutex
	chunks [][]byte
	total  int64
}

// grow allocates n more bytes, a chunk at a time, asking the accounter
// before each. It stops at the first refusal and returns errOOMKilled, or
// quietly when stop is closed (the app is exiting).
func (h *hog) grow(n int64, stop <-chan struct{}) error {
	for n > 0 {
		select {
		case <-stop:
			return nil
		default:
		}
		step := min(n, allocationChunk)
		if h.accounter != nil {
			if err := h.accounter.Allocate(step); err != nil {
				return errOOMKilled{cause: err}
			}
		}
		chunk := make([]byte, step)
		for i := 0; i < len(chunk); i += pageSize {
			chunk[i] = 1
		}
		h.mu.Lock()
		h.chunks = append(h.chunks, chunk)
		h.total += step
		h.mu.Unlock()
		n -= step
	}
	return nil
}

// allocated returns how many bytes the app holds.
func (h *hog) allocated() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total
}

// release drops the memory so the garbage collector can take it back once
// the app has exited.
func (h *hog) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.chunks = nil
}

// formatBytes writes a byte count as a Kubernetes quantity ("64Mi").
func formatBytes(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}
