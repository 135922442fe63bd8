package etcd

import (
	"context"
	"sync"
)

// notifier is a broadcast: waiters take the current channel and are woken
// when it is closed; notify closes it and installs a new one.
type notifier struct {
	mu sync.Mutex
	c  chan struct{}
}

func newNotifier() *notifier { return &notifier{c: make(chan struct{})} }

func (n *notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.c
}

func (n *notifier) notify() {
	n.mu.Lock()
	close(n.c)
	n.c = make(chan struct{})
	n.mu.Unlock()
}

// gate is open while the member runs and shut while it is paused. Everything
// that a frozen process would not do waits on it.
type gate struct {
	mu     sync.Mutex
	isOpen bool
	c      chan struct{} // closed while open
}

func newGate() *gate {
	c := make(chan struct{})
	close(c)
	return &gate{isOpen: true, c: c}
}

// shut closes the gate; it reports whether it was open.
func (g *gate) shut() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.isOpen {
		return false
	}
	g.isOpen = false
	g.c = make(chan struct{})
	return true
}

// open opens the gate; it reports whether it was shut.
func (g *gate) open() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.isOpen {
		return false
	}
	g.isOpen = true
	close(g.c)
	return true
}

func (g *gate) isShut() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.isOpen
}

// pass waits until the gate is open.
func (g *gate) pass(ctx context.Context) error {
	g.mu.Lock()
	c := g.c
	g.mu.Unlock()
	select {
	case <-c:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// applyResult is what applying one request produced.
type applyResult struct {
	resp any
	err  error
}

// waitList pairs proposals with the results of applying them.
type waitList struct {
	mu sync.Mutex
	m  map[uint64]chan applyResult
}

func newWaitList() *waitList { return &waitList{m: map[uint64]chan applyResult{}} }

func (w *waitList) register(id uint64) <-chan applyResult {
	c := make(chan applyResult, 1)
	w.mu.Lock()
	w.m[id] = c
	w.mu.Unlock()
	return c
}

func (w *waitList) trigger(id uint64, r applyResult) {
	w.mu.Lock()
	c, ok := w.m[id]
	delete(w.m, id)
	w.mu.Unlock()
	if ok {
		c <- r
	}
}

func (w *waitList) cancel(id uint64) {
	w.mu.Lock()
	delete(w.m, id)
	w.mu.Unlock()
}

func (w *waitList) failAll(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, c := range w.m {
		c <- applyResult{err: err}
		delete(w.m, id)
	}
}

// readNotifier is shared by every linearizable read that waits for the same
// ReadIndex round.
type readNotifier struct {
	c   chan struct{}
	err error
}

func newReadNotifier() *readNotifier { return &readNotifier{c: make(chan struct{})} }

func (r *readNotifier) notify(err error) {
	r.err = err
	close(r.c)
}
